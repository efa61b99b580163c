import type { SelectPlan, ViewPlan } from './compile-view.ts'
import type { Scope } from './paths.ts'
import { joinPosition, positionsOf, rowPosition } from './positions.ts'
import { ViewRunError } from './view-definition.ts'

/**
 * Running a compiled view (SQL-ON-FHIR.md, "The engine"): resource by resource, so memory holds
 * one resource's rows at a time, whatever the input's size. A row is an array of cells in the
 * order of `plan.columns`; `rowObject` names them.
 */

export type Row = unknown[]

/** The rows of one resource: none when it is of another type or a `where` excludes it. */
export function rowsOf(plan: ViewPlan, resource: unknown): Row[] {
  return resourceParts(plan, resource, false).map((p) => p.row)
}

/** A row with its position in the resource (positions.ts): `name[1].given[0]`, `''` for the resource's own row. */
export interface PositionedRow {
  row: Row
  position: string
}

/**
 * The rows of one resource with the position of the elements each was unnested from: unique
 * within the resource (a unionAll branch adds `unionAll[b]` at its element), so a panel defined by
 * the view can key its rows by them.
 */
export function positionedRowsOf(plan: ViewPlan, resource: unknown): PositionedRow[] {
  return resourceParts(plan, resource, true).map((p) => ({ row: p.row, position: rowPosition(p.at) }))
}

/** Every row of `resources`, streamed: a sync iterable in, rows out as they come. */
export function* runView(plan: ViewPlan, resources: Iterable<unknown>): Generator<Row> {
  for (const resource of resources) yield* rowsOf(plan, resource)
}

/** The same over an async source (a data source's records read in pages). */
export async function* runViewAsync(plan: ViewPlan, resources: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<Row> {
  for await (const resource of resources) yield* rowsOf(plan, resource)
}

/** A row as `{ column: value }` in column order (JSON and ndjson output, the official tests). */
export function rowObject(plan: ViewPlan, row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const columns = plan.columns
  for (let i = 0; i < columns.length; i++) out[columns[i].name] = row[i]
  return out
}

// --- Internal helpers ---

/** A row being built, with the positions of its elements when they are tracked (else NONE). */
interface Part {
  row: Row
  at: string[]
}

const NONE: string[] = []

/** Where an element sits and whether positions are tracked; NO_TRACK for plain runs. */
interface Place {
  track: boolean
  at: string
}

const NO_TRACK: Place = { track: false, at: '' }

function resourceParts(plan: ViewPlan, resource: unknown, track: boolean): Part[] {
  if (
    typeof resource !== 'object' ||
    resource === null ||
    (resource as { resourceType?: unknown }).resourceType !== plan.resource
  ) {
    return []
  }
  const scope: Scope = { resource, rowIndex: 0 }
  for (const where of plan.where) {
    const result = where.evaluate(resource, scope)
    if (result.length === 0) return []
    if (result.length > 1 || typeof result[0] !== 'boolean') {
      throw new ViewRunError(where.at, keyOf(resource), `a where path must yield a boolean or nothing, got ${describe(result)}`)
    }
    if (result[0] === false) return []
  }
  return selectRows(plan.root, resource, 0, scope, track ? { track, at: '' } : NO_TRACK)
}

/**
 * The rows of one select for one element: for each element it unnests (or the element itself),
 * its own cells, times each nested select's rows, times the rows of its unionAll branches.
 */
function selectRows(select: SelectPlan, element: unknown, rowIndex: number, scope: Scope, place: Place): Part[] {
  if (select.kind === 'plain') return elementRows(select, element, rowIndex, scope, place)
  let items: unknown[]
  let at: string[] = NONE
  if (select.kind === 'repeat') ({ items, at } = repeated(select, element, rowIndex, scope, place))
  else {
    const step = select.steps[0]
    items = step.evaluate(element, { resource: scope.resource, rowIndex })
    if (place.track) at = positionsOf(step, element, items).map((p) => joinPosition(place.at, p))
  }
  if (items.length === 0) return select.kind === 'forEachOrNull' ? [{ row: nullRow(select, scope), at: NONE }] : []
  const here = (i: number): Place => (place.track ? { track: true, at: at[i] } : NO_TRACK)
  if (items.length === 1) return elementRows(select, items[0], 0, scope, here(0), true)
  const rows: Part[] = []
  for (let i = 0; i < items.length; i++) {
    const part = elementRows(select, items[i], i, scope, here(i), true)
    for (let j = 0; j < part.length; j++) rows.push(part[j])
  }
  return rows
}

function elementRows(
  select: SelectPlan,
  element: unknown,
  rowIndex: number,
  outer: Scope,
  place: Place,
  unnested = false,
): Part[] {
  const scope = rowIndex === outer.rowIndex ? outer : { resource: outer.resource, rowIndex }
  const own: Row = new Array(select.columns.length)
  for (let c = 0; c < select.columns.length; c++) {
    const { column, evaluate } = select.columns[c]
    const values = evaluate(element, scope)
    if (column.collection) own[c] = values
    else if (values.length === 0) own[c] = null
    else if (values.length === 1) own[c] = values[0]
    else {
      throw new ViewRunError(
        `${column.at}.path`,
        keyOf(outer.resource),
        `column ${column.name} has ${values.length} values; declare "collection": true to keep them as an array`,
      )
    }
  }
  let rows: Part[] = [{ row: own, at: place.track && unnested ? [place.at] : NONE }]
  for (const child of select.selects) {
    rows = product(rows, selectRows(child, element, rowIndex, scope, place))
    if (rows.length === 0) return rows
  }
  if (select.unionAll.length > 0) {
    const union: Part[] = []
    select.unionAll.forEach((branch, b) => {
      const part = selectRows(branch, element, rowIndex, scope, place)
      const marker = place.track ? [joinPosition(place.at, `unionAll[${b}]`)] : NONE
      for (let j = 0; j < part.length; j++)
        union.push(place.track ? { row: part[j].row, at: [...marker, ...part[j].at] } : part[j])
    })
    rows = product(rows, union)
  }
  return rows
}

/**
 * forEachOrNull over nothing: one row of nulls, except that its own columns still see %rowIndex (0),
 * as the official tests expect; nested selects give nulls (SQL-on-FHIR: "null values in the
 * nested expression"), not their own empty results.
 */
function nullRow(select: SelectPlan, outer: Scope): Row {
  const row: Row = new Array(select.width).fill(null)
  const scope = { resource: outer.resource, rowIndex: 0 }
  for (let c = 0; c < select.columns.length; c++) {
    const values = select.columns[c].evaluate(null, scope)
    row[c] = select.columns[c].column.collection ? values : (values[0] ?? null)
  }
  return row
}

/** Every pairing of a left row with a right row, cells (and positions) concatenated (the select's row order). */
function product(left: Part[], right: Part[]): Part[] {
  if (right.length === 0) return []
  if (left.length === 1 && left[0].row.length === 0 && left[0].at.length === 0) return right
  const out: Part[] = []
  for (const l of left) for (const r of right) out.push(join(l, r))
  return out
}

function join(l: Part, r: Part): Part {
  const row = r.row.length === 0 ? l.row : l.row.concat(r.row)
  const at = r.at.length === 0 ? l.at : l.at.length === 0 ? r.at : l.at.concat(r.at)
  return { row, at }
}

/** `repeat`: the elements its paths reach from `element`, then from each of those, depth first (with their positions when tracked). */
function repeated(select: SelectPlan, element: unknown, rowIndex: number, scope: Scope, place: Place) {
  const items: unknown[] = []
  const at: string[] = []
  const visit = (from: unknown, fromAt: string, steps: typeof select.steps, depth: number) => {
    if (depth > 1000) throw new ViewRunError('repeat', keyOf(scope.resource), 'nesting deeper than 1000 levels')
    for (const step of steps) {
      const found = step.evaluate(from, { resource: scope.resource, rowIndex })
      const positions = place.track ? positionsOf(step, from, found) : NONE
      found.forEach((item, i) => {
        items.push(item)
        const itemAt = place.track ? joinPosition(fromAt, positions[i]) : ''
        if (place.track) at.push(itemAt)
        visit(item, itemAt, select.repeatSteps, depth + 1)
      })
    }
  }
  visit(element, place.at, select.steps, 0)
  return { items, at }
}

function keyOf(resource: unknown): string {
  const { resourceType, id } = (resource ?? {}) as { resourceType?: unknown; id?: unknown }
  return `${String(resourceType ?? 'resource')}/${String(id ?? '(no id)')}`
}

function describe(values: unknown[]): string {
  const text = JSON.stringify(values)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
