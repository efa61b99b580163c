import { type SQL, sql } from 'drizzle-orm'
import type { CellKind } from '../../engine/cells/coerce.ts'
import { isDateKind, isTextual } from '../../engine/filters/kinds.ts'
import type { FilterOperator } from '../../engine/filters/operators.ts'
import type { ColumnRef, FilterNode } from '../../engine/filters/resolve.ts'
import type { Comparand } from '../../engine/filters/values.ts'
import { virtualSql } from './virtual.ts'

/**
 * Filters over materialised cells as SQL (DATA-ENGINE: Views over rows). A cell is
 * `r.cells ->> '$."<column id>"'` — the very expression of the panel's row index
 * (row-index.ts), so SQLite reads it from the index instead of parsing JSON. Column ids are
 * integers checked here; every user value is a bound parameter.
 */

const TRUE = sql`1`
const FALSE = sql`0`

/** JSON path of a column's cell; the id must be a safe positive integer (it is inlined). */
export function cellPath(id: number): string {
  if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`invalid column id ${id}`)
  return `'$."${id}"'`
}

/** The cell of a column in the query's `r` (records) alias; a virtual column's value (virtual.ts). */
export const cell = (column: ColumnRef): SQL =>
  column.virtual ? virtualSql(column) : sql.raw(`(r.cells ->> ${cellPath(column.id)})`)

/**
 * True when the cell holds a JSON array. The range test (texts starting with `[`) is plain
 * comparisons on the indexed value, so json_type runs only on the few rows that may be arrays.
 * A virtual column never holds one.
 */
export const isArrayCell = (column: ColumnRef): SQL =>
  column.virtual
    ? FALSE
    : sql.raw(
        `((r.cells ->> ${cellPath(column.id)}) >= '[' AND (r.cells ->> ${cellPath(column.id)}) < '\\' AND json_type(r.cells, ${cellPath(column.id)}) = 'array')`,
      )

/** True when the cell is blank: null, "" or [] (what isEmpty matches, count skips and sorts put last). */
export const isBlankCell = (column: ColumnRef): SQL =>
  sql`(${cell(column)} IS NULL OR ${cell(column)} = '' OR (${cell(column)} = '[]' AND ${isArrayCell(column)}))`

/** The WHERE condition of a resolved filter tree; an empty AND group is true, an empty OR group false. */
export function filterSql(node: FilterNode): SQL {
  if (node.type === 'condition') return conditionSql(node.column, node.operator, node.values)
  if (node.children.length === 0) return node.logic === 'AND' ? TRUE : FALSE
  const parts = node.children.map(filterSql)
  return parts.length === 1 ? parts[0] : sql`(${sql.join(parts, sql.raw(` ${node.logic} `))})`
}

/** Case-insensitive substring search over the given columns (any of them matches). */
export function searchSql(columns: ColumnRef[], text: string): SQL {
  if (columns.length === 0) return FALSE
  const pattern = `%${escapeLike(text)}%`
  return sql`(${sql.join(
    columns.map((c) => sql`CAST(${cell(c)} AS TEXT) LIKE ${pattern} ESCAPE '\\'`),
    sql` OR `,
  )})`
}

const NEGATIVE: Partial<Record<FilterOperator, FilterOperator>> = {
  notEquals: 'equals',
  notContains: 'contains',
  notIn: 'in',
  notBetween: 'between',
  isNotNull: 'isNull',
  isNotEmpty: 'isEmpty',
}

/**
 * One condition. Negative operators are exactly NOT of their positive twin (`IS NOT 1` also
 * holds when the twin is NULL, so `notEquals x` matches blank cells); a positive operator on an
 * array cell matches when any element matches.
 */
function conditionSql(column: ColumnRef, operator: FilterOperator, values: Comparand[]): SQL {
  const twin = NEGATIVE[operator]
  if (twin) return sql`(${conditionSql(column, twin, values)}) IS NOT 1`
  const v = cell(column)
  if (operator === 'isNull') return sql`${v} IS NULL`
  if (operator === 'isEmpty') return isBlankCell(column)
  if (column.virtual)
    return column.name === '_assignee' ? userIdSql(v, operator, values) : scalarSql(v, column.kind, operator, values)
  const element = sql.raw('e.value')
  return sql`(CASE WHEN ${isArrayCell(column)} THEN EXISTS (SELECT 1 FROM json_each(r.cells, ${sql.raw(cellPath(column.id))}) e WHERE ${scalarSql(element, column.kind, operator, values)}) ELSE ${scalarSql(v, column.kind, operator, values)} END)`
}

/** A positive operator on one scalar value `x`. */
function scalarSql(x: SQL, kind: CellKind, operator: FilterOperator, values: Comparand[]): SQL {
  switch (operator) {
    case 'equals':
      return compare(x, kind, values[0], '=')
    case 'greaterThan':
      return compare(x, kind, values[0], '>')
    case 'lessThan':
      return compare(x, kind, values[0], '<')
    case 'greaterThanOrEqual':
      return compare(x, kind, values[0], '>=')
    case 'lessThanOrEqual':
      return compare(x, kind, values[0], '<=')
    case 'between':
      return sql`(${compare(x, kind, values[0], '>=')} AND ${compare(x, kind, values[1], '<=')})`
    case 'in':
      return inList(x, kind, values)
    case 'contains':
      return like(x, `%${escapeLike(String(values[0].value))}%`)
    case 'startsWith':
      return like(x, `${escapeLike(String(values[0].value))}%`)
    case 'endsWith':
      return like(x, `%${escapeLike(String(values[0].value))}`)
    default:
      throw new Error(`operator ${operator} has no scalar form`)
  }
}

/**
 * `_assignee` holds user ids, which differ by case: `equals` and `in` compare them exactly (so
 * `@me` is the reader and no one else); the other operators compare as text does.
 */
function userIdSql(x: SQL, operator: FilterOperator, values: Comparand[]): SQL {
  if (operator === 'equals') return sql`${x} = ${String(values[0].value)}`
  if (operator === 'in') {
    if (values.length === 0) return FALSE
    return sql`${x} IN (SELECT value FROM json_each(${JSON.stringify(values.map((c) => String(c.value)))}))`
  }
  return scalarSql(x, 'text', operator, values)
}

/**
 * `x <op> value` as the kind compares: texts case-insensitively (numbers in a text column as
 * their text), date-only values against the cell's date part at their own precision.
 */
function compare(x: SQL, kind: CellKind, c: Comparand, op: '=' | '>' | '<' | '>=' | '<='): SQL {
  const test = sql`${lhs(x, kind, c)} ${sql.raw(op)} ${c.value}`
  // A "" in a number or date column is a blank, not a text that SQLite would rank above every number.
  return isTextual(kind) ? test : sql`(${x} <> '' AND ${test})`
}

function lhs(x: SQL, kind: CellKind, c: Comparand): SQL {
  if (isTextual(kind)) return sql`CAST(${x} AS TEXT) COLLATE NOCASE`
  if (isDateKind(kind) && c.day) return sql`substr(${x}, 1, ${sql.raw(String(String(c.value).length))})`
  return x
}

/** `x IN (…)` with the list bound as one JSON parameter (few bound parameters on any SQLite). */
function inList(x: SQL, kind: CellKind, values: Comparand[]): SQL {
  if (values.length === 0) return FALSE
  const byForm = new Map<string, Comparand[]>()
  for (const c of values) {
    const form = isDateKind(kind) && c.day ? `day${String(c.value).length}` : 'value'
    byForm.set(form, [...(byForm.get(form) ?? []), c])
  }
  const parts = [...byForm.values()].map(
    (list) => sql`${lhs(x, kind, list[0])} IN (SELECT value FROM json_each(${JSON.stringify(list.map((c) => c.value))}))`,
  )
  return parts.length === 1 ? parts[0] : sql`(${sql.join(parts, sql` OR `)})`
}

const like = (x: SQL, pattern: string): SQL => sql`CAST(${x} AS TEXT) LIKE ${pattern} ESCAPE '\\'`

/** Escapes LIKE wildcards so the user's text matches literally. */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, (ch) => `\\${ch}`)
