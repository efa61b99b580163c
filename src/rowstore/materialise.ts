import { and, asc, eq, sql } from 'drizzle-orm'
import { columns, dataSources, panels } from '../db/schema.ts'
import type { Deps } from '../deps.ts'
import {
  type ColumnDefinition,
  type FormulaCompiler,
  type MaterialisedRow,
  type MaterialisePlan,
  materialise,
  planColumns,
} from '../engine/cells/materialise.ts'
import { loadFhirPathEngineFor } from '../engine/fhirpath/engine.ts'
import { compileFormula, evaluationOrder, formulaFhirPaths } from '../engine/formula/index.ts'
import { type PanelView, panelView, type StoredRow } from './expand.ts'

type ColumnRow = typeof columns.$inferSelect

/**
 * Materialised rows (DATA-ENGINE: Rows): cells are computed when records are written and when
 * columns change, so reading a view never evaluates FHIRPath or formulas. Every column change bumps
 * the panel's `columns_version`; a recompute reads every row of the panel in batches by id, writes
 * back only the rows whose cells changed, and then marks the panel `materialised_version` = that
 * version. A panel whose two versions differ is stale and is recomputed again. The FHIRPath engine
 * is loaded only when a plan or a batch needs it (loadPanelPlan, prepareRows; engine.ts).
 */

export interface PanelPlan {
  panelId: number
  version: number
  plan: MaterialisePlan
  /** The panel's `import` data sources: their records hold values by column name. */
  importSources: Set<number>
  /** The FHIRPath expressions the plan evaluates (base columns' and formulas'), for prepareRows. */
  fhirPaths: (string | null)[]
  /** The panel's ViewDefinition, when it is defined by one: records are stored as its rows (expand.ts). */
  view?: PanelView
  /**
   * What the base columns' cells of a record depend on (the base columns' definitions in plan
   * order and the import sources), as text: two plans with the same `base` give a record the same
   * base cells and errors. Null when a row's stored base cells may not be kept under a later plan
   * (`trustedVersions`): a panel defined by a view, a base path that reads the clock, a
   * calculated column that reads the source record.
   */
  base: string | null
}

/** The panel's columns compiled for materialisation: base columns, then calculated ones in dependency order. */
export async function loadPanelPlan(db: Deps['db'], tenantId: string, panelId: number): Promise<PanelPlan> {
  const [[panel], rows, imports] = await db.batch([
    db
      .select({ version: panels.columnsVersion, view: panels.viewDefinition, viewSource: panels.viewDataSourceId })
      .from(panels)
      .where(and(eq(panels.id, panelId), eq(panels.tenantId, tenantId))),
    db
      .select()
      .from(columns)
      .where(and(eq(columns.tenantId, tenantId), eq(columns.panelId, panelId)))
      .orderBy(asc(columns.id)),
    db
      .select({ id: dataSources.id })
      .from(dataSources)
      .where(and(eq(dataSources.tenantId, tenantId), eq(dataSources.panelId, panelId), eq(dataSources.type, 'import'))),
  ])
  const fhirPaths = rows.flatMap((c) =>
    c.columnType === 'calculated'
      ? formulaFhirPaths(c.formula ?? '')
      : c.fhirPath && c.readBy !== 'sourceField'
        ? [c.fhirPath]
        : [],
  )
  await loadFhirPathEngineFor(fhirPaths)
  const ordered = orderColumns(rows)
  const importSources = new Set(imports.map((i) => i.id))
  const base = panel?.view ? null : baseOf(ordered, importSources)
  const version = panel?.version ?? 0
  if (base !== null) rememberPlan(db, tenantId, panelId, version, base)
  return {
    panelId,
    version,
    plan: planColumns(ordered, formulaCompiler(rows)),
    importSources,
    fhirPaths,
    base,
    view: panel?.view
      ? await panelView(
          panel.view,
          panel.viewSource,
          rows.filter((c) => c.columnType === 'base'),
        )
      : undefined,
  }
}

/**
 * Awaited before rowOf over a batch of records' data: loads the FHIRPath engine when the plan may
 * need it for them (a member path falls back to it on a FHIR resource), so rowOf stays synchronous.
 */
export const prepareRows = (plan: PanelPlan, data: Iterable<unknown>): Promise<void> =>
  loadFhirPathEngineFor(plan.fhirPaths, data)

/** One record's row under a plan (after prepareRows for its batch); `stored`: a row of a view (expand.ts). */
export function rowOf(plan: PanelPlan, dataSourceId: number, data: unknown, now: Date, stored?: StoredRow): MaterialisedRow {
  const input = { dataSourceId, data, importedByName: plan.importSources.has(dataSourceId), given: stored?.given }
  const row = materialise(plan.plan, input, now)
  if (stored?.viewError) row.errors.push(stored.viewError)
  return row
}

/**
 * The columns versions (≥ 1) of this panel whose plans, as this process loaded them, had the same
 * base columns as `plan`: a row stored with one of them as its `cells_version` was materialised
 * with these base columns, so a recompute may keep its base cells and evaluate only the calculated
 * ones again (engine/cells `rematerialise`). A version loaded with two different bases (a column
 * change that did not bump the version) is never answered. Empty when `plan.base` is null.
 */
export function trustedVersions(db: Deps['db'], tenantId: string, plan: PanelPlan): number[] {
  if (plan.base === null) return []
  const versions = loadedPlans.get(db)?.get(`${tenantId}:${plan.panelId}`)
  if (!versions) return []
  return [...versions].filter(([, base]) => base === plan.base).map(([version]) => version)
}

/** The SQL expression of the statement that bumps a panel's columns version (in a column change's batch). */
export const bumpColumnsVersion = (db: Deps['db'], tenantId: string, panelId: number) =>
  db.run(sql`UPDATE panels SET columns_version = columns_version + 1 WHERE id = ${panelId} AND tenant_id = ${tenantId}`)

/**
 * Bases (PanelPlan.base) of the plans this process loaded, per database, panel and columns
 * version. A version's columns never change without the version (every column change bumps it in
 * its own batch, and a plan is read in one), so what a version's plan was is known once seen. Kept
 * for the last MAX_VERSIONS versions of the last MAX_PANELS panels loaded; a version not here
 * (another process changed the columns, a restart) only means rows stored with it are materialised
 * again from their records.
 */
const loadedPlans = new WeakMap<object, Map<string, Map<number, string>>>()
const MAX_PANELS = 2000
const MAX_VERSIONS = 32
/** A version seen with two different bases: never trusted. */
const AMBIGUOUS = ''

function rememberPlan(db: Deps['db'], tenantId: string, panelId: number, version: number, base: string) {
  if (version < 1) return
  let panels = loadedPlans.get(db)
  if (!panels) {
    panels = new Map()
    loadedPlans.set(db, panels)
  }
  const key = `${tenantId}:${panelId}`
  const versions = panels.get(key) ?? new Map<number, string>()
  // Most recently loaded last, so the oldest panel is dropped first.
  panels.delete(key)
  panels.set(key, versions)
  if (panels.size > MAX_PANELS) panels.delete(panels.keys().next().value as string)
  const known = versions.get(version)
  versions.set(version, known === undefined || known === base ? base : AMBIGUOUS)
  if (versions.size > MAX_VERSIONS) versions.delete(Math.min(...versions.keys()))
}

/**
 * PanelPlan.base of `ordered` (base columns first, in id order) and the panel's import sources;
 * null when a kept base cell could differ from a fresh one: a base path calling today(), now() or
 * timeOfDay(), or a calculated column reading the source record (a source path, FHIRPATH()).
 */
function baseOf(ordered: ColumnDefinition[], importSources: Set<number>): string | null {
  const base = ordered.filter((c) => c.columnType === 'base')
  if (base.some((c) => /\b(today|now|timeOfDay)\s*\(/.test(`${c.fhirPath ?? ''} ${c.sourceField ?? ''}`))) return null
  if (ordered.some((c) => c.columnType === 'calculated' && formulaFhirPaths(c.formula ?? '').length > 0)) return null
  return JSON.stringify([
    base.map((c) => [c.id, c.name, c.type, c.fhirPath, c.sourceField, c.readBy, c.dataSourceId, c.properties]),
    [...importSources].sort((a, b) => a - b),
  ])
}

function orderColumns(rows: ColumnRow[]): ColumnDefinition[] {
  const base = rows.filter((c) => c.columnType === 'base')
  let calculated: ColumnRow[]
  try {
    calculated = evaluationOrder(rows.filter((c) => c.columnType === 'calculated'))
  } catch {
    // A cycle cannot be stored (create/update refuse it); keep id order so every cell still reports.
    calculated = rows.filter((c) => c.columnType === 'calculated')
  }
  return [...base, ...calculated] as ColumnDefinition[]
}

/** Formulas compiled against the panel's columns, evaluated with the row's cells by name. */
function formulaCompiler(rows: ColumnRow[]): FormulaCompiler {
  const known = rows.map((c) => ({ name: c.name, type: c.type, formula: c.formula, columnType: c.columnType }))
  return (column) => {
    const compiled = compileFormula(column.formula ?? '', { columns: known, selfName: column.name })
    // One clock for every row (no closure made per row): it answers the row's `now`.
    let at = new Date(0)
    const clock = { now: () => at }
    return (row, now) => {
      at = now
      const result = compiled.evaluate({ cells: row.cells, record: row.record as object | undefined }, clock)
      return result.error ? { value: null, error: result.error } : { value: result.value }
    }
  }
}
