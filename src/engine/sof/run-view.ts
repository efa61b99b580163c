import type { SelectPlan, ViewPlan } from './compile-view.ts'
import type { Scope } from './paths.ts'
import { ViewRunError } from './view-definition.ts'

/**
 * Running a compiled view (SQL-ON-FHIR.md, "The engine"): resource by resource, so memory holds
 * one resource's rows at a time, whatever the input's size. A row is an array of cells in the
 * order of `plan.columns`; `rowObject` names them.
 */

export type Row = unknown[]

/** The rows of one resource: none when it is of another type or a `where` excludes it. */
export function rowsOf(plan: ViewPlan, resource: unknown): Row[] {
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
  return selectRows(plan.root, resource, 0, scope)
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

/**
 * The rows of one select for one element: for each element it unnests (or the element itself),
 * its own cells, times each nested select's rows, times the rows of its unionAll branches.
 */
function selectRows(select: SelectPlan, element: unknown, rowIndex: number, scope: Scope): Row[] {
  if (select.kind === 'plain') return elementRows(select, element, rowIndex, scope)
  const items =
    select.kind === 'repeat'
      ? repeated(select, element, rowIndex, scope)
      : select.steps[0].evaluate(element, { resource: scope.resource, rowIndex })
  if (items.length === 0) return select.kind === 'forEachOrNull' ? [nullRow(select, scope)] : []
  if (items.length === 1) return elementRows(select, items[0], 0, scope)
  const rows: Row[] = []
  for (let i = 0; i < items.length; i++) {
    const part = elementRows(select, items[i], i, scope)
    for (let j = 0; j < part.length; j++) rows.push(part[j])
  }
  return rows
}

function elementRows(select: SelectPlan, element: unknown, rowIndex: number, outer: Scope): Row[] {
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
  let rows: Row[] = [own]
  for (const child of select.selects) {
    rows = product(rows, selectRows(child, element, rowIndex, scope))
    if (rows.length === 0) return rows
  }
  if (select.unionAll.length > 0) {
    const union: Row[] = []
    for (const branch of select.unionAll) {
      const part = selectRows(branch, element, rowIndex, scope)
      for (let j = 0; j < part.length; j++) union.push(part[j])
    }
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

/** Every pairing of a left row with a right row, cells concatenated (the select's row order). */
function product(left: Row[], right: Row[]): Row[] {
  if (right.length === 0) return []
  if (left.length === 1 && left[0].length === 0) return right
  if (right.length === 1) {
    const r = right[0]
    return left.map((l) => (r.length === 0 ? l : l.concat(r)))
  }
  const out: Row[] = []
  for (const l of left) for (const r of right) out.push(l.concat(r))
  return out
}

/** `repeat`: the elements its paths reach from `element`, then from each of those, depth first. */
function repeated(select: SelectPlan, element: unknown, rowIndex: number, scope: Scope): unknown[] {
  const out: unknown[] = []
  const visit = (from: unknown, steps: typeof select.steps, depth: number) => {
    if (depth > 1000) throw new ViewRunError('repeat', keyOf(scope.resource), 'nesting deeper than 1000 levels')
    for (const step of steps) {
      for (const item of step.evaluate(from, { resource: scope.resource, rowIndex })) {
        out.push(item)
        visit(item, select.repeatSteps, depth + 1)
      }
    }
  }
  visit(element, select.steps, 0)
  return out
}

function keyOf(resource: unknown): string {
  const { resourceType, id } = (resource ?? {}) as { resourceType?: unknown; id?: unknown }
  return `${String(resourceType ?? 'resource')}/${String(id ?? '(no id)')}`
}

function describe(values: unknown[]): string {
  const text = JSON.stringify(values)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
