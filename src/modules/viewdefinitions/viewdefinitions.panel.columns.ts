import type { columns } from '../../db/schema.ts'
import type { ViewPlan } from '../../engine/sof/index.ts'

/**
 * A panel's base columns and a ViewDefinition's columns, one into the other (docs/sql-on-fhir.md,
 * "Panels defined by a ViewDefinition"): name, path (FHIRPath), type, collection.
 */

type ColumnRow = typeof columns.$inferSelect

/** A view column as a base column of the panel. */
export interface ViewBaseColumn {
  name: string
  path: string
  /** The panel's column type the view's FHIR type maps to. */
  type: string
  collection: boolean
}

/** FHIR types → panel column types; every other type (and none) is text. */
const PANEL_TYPES: Record<string, string> = {
  integer: 'number',
  integer64: 'number',
  positiveInt: 'number',
  unsignedInt: 'number',
  decimal: 'number',
  boolean: 'boolean',
  date: 'date',
  dateTime: 'datetime',
  instant: 'datetime',
}

/** Panel column types → FHIR types, for a panel's columns written as a view. */
const FHIR_TYPES: Record<string, string> = {
  text: 'string',
  number: 'decimal',
  currency: 'decimal',
  percentage: 'decimal',
  integer: 'integer',
  decimal: 'decimal',
  boolean: 'boolean',
  date: 'date',
  datetime: 'dateTime',
}

export const panelTypeOf = (fhirType: string | undefined): string => (fhirType && PANEL_TYPES[fhirType]) || 'text'

/** The view's columns in output order, with their paths as written (read from the definition at each column's place). */
export function viewBaseColumns(definition: Record<string, unknown>, plan: ViewPlan): ViewBaseColumn[] {
  return plan.columns.map((column) => {
    const raw = at(definition, column.at) as { path?: unknown }
    return { name: column.name, path: String(raw?.path ?? ''), type: panelTypeOf(column.type), collection: column.collection }
  })
}

/**
 * A panel's base columns as a flat ViewDefinition: one select, one column each, path = its
 * FHIRPath (or its source field as FHIRPath), type mapped back. Names that are not valid view
 * column names are made valid (`Birth Date` → `Birth_Date`), the panel's name kept in a
 * `panel-column` tag.
 */
export function flatViewOf(panelName: string, resource: string, base: ColumnRow[]): Record<string, unknown> {
  const used = new Set<string>()
  const column = base.map((c) => {
    const name = uniqueName(viewName(c.name), used)
    const out: Record<string, unknown> = { name, path: pathOf(c) }
    const type = FHIR_TYPES[c.type.toLowerCase()]
    if (type) out.type = type
    if (c.properties?.collection === true) out.collection = true
    if (name !== c.name) out.tag = [{ name: 'panel-column', value: c.name }]
    return out
  })
  return { resourceType: 'ViewDefinition', name: viewName(panelName), status: 'active', resource, select: [{ column }] }
}

/**
 * Each view column's path from the resource, for when the view goes and its columns read records
 * one row each: a column under `forEach: name` with path `family` reads `name.family` (all the
 * record's values); `$this` is the unnested path itself; other paths go through `select(...)`;
 * `repeat` through `repeat(a | b)`. Columns at the top level keep their path.
 */
export function resourcePaths(definition: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (selects: unknown, prefix: string) => {
    if (!Array.isArray(selects)) return
    for (const select of selects as Record<string, unknown>[]) {
      const unnest = select.forEach ?? select.forEachOrNull
      let here = prefix
      if (typeof unnest === 'string') here = compose(prefix, unnest)
      else if (Array.isArray(select.repeat)) here = compose(prefix, `repeat(${select.repeat.join(' | ')})`)
      for (const column of (select.column ?? []) as { name?: unknown; path?: unknown }[]) {
        if (typeof column.name === 'string' && !out.has(column.name))
          out.set(column.name, compose(here, String(column.path ?? '')))
      }
      walk(select.select, here)
      walk(select.unionAll, here)
    }
  }
  walk(definition.select, '')
  return out
}

// --- Internal helpers ---

const MEMBER_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/

function compose(prefix: string, path: string): string {
  const p = path.trim()
  if (prefix === '') return p
  if (p === '$this') return prefix
  return MEMBER_PATH.test(p) ? `${prefix}.${p}` : `${prefix}.select(${p})`
}

/** The element at a place like `select[1].column[0]` in the definition. */
function at(definition: Record<string, unknown>, place: string): unknown {
  let current: unknown = definition
  for (const [, key, index] of place.matchAll(/([A-Za-z]+)\[(\d+)\]/g)) {
    current = (current as Record<string, unknown[]> | undefined)?.[key]?.[Number(index)]
  }
  return current
}

function pathOf(c: ColumnRow): string {
  if (c.readBy !== 'sourceField' && c.fhirPath) return c.fhirPath
  const field = c.sourceField ?? c.fhirPath ?? ''
  // Segments that are not FHIRPath identifiers are delimited (`Full Name` → `\`Full Name\``).
  if (MEMBER_PATH.test(field)) return field
  return `\`${field.replace(/`/g, '\\`')}\``
}

function viewName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_]+/g, '_').replace(/^_+|_+$/g, '')
  return /^[A-Za-z]/.test(cleaned) ? cleaned : `c_${cleaned}`
}

function uniqueName(name: string, used: Set<string>): string {
  let candidate = name
  for (let n = 2; used.has(candidate); n++) candidate = `${name}_${n}`
  used.add(candidate)
  return candidate
}
