import { type SQL, sql } from 'drizzle-orm'
import type { AggregateFunction } from '../../engine/filters/kinds.ts'
import { isTextual } from '../../engine/filters/kinds.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import { cell, isBlankCell } from './filter-sql.ts'

/**
 * groupBy and aggregations in SQL (DATA-ENGINE: groupBy and aggregations). `count` counts
 * non-blank cells, `distinct` distinct non-blank values; sum/average/min/max/median ignore blanks
 * (and anything that is not a number, for the numeric ones). Texts group and count distinct
 * case-insensitively, like filters compare them. Medians come from a window query per function.
 */

export interface AggregateSpec {
  /** The answer's key: the alias, else `<function>(<column>)`. */
  key: string
  fn: AggregateFunction
  column: ColumnRef
}

/**
 * Where the statements read a column's value: its cell, and its cell with blanks as null. The
 * records' cells by default; a view's stored members' values when they answer (member-summary.ts).
 */
export interface CellSource {
  cell: (c: ColumnRef) => SQL
  value: (c: ColumnRef) => SQL
}

/** The panel's records (alias `r`): the cells as the row query reads them. */
export const RECORD_CELLS: CellSource = {
  cell,
  value: (c) => sql`(CASE WHEN ${isBlankCell(c)} THEN NULL ELSE ${cell(c)} END)`,
}

/** At most this many groups are answered (ordered by key). */
export const MAX_GROUPS = 1000

/** `FROM … WHERE …` of the rows in scope, shared by every statement. */
export type Scope = SQL

export interface GroupRow {
  key: Record<string, unknown>
  count: number
  aggregations: Record<string, unknown>
}

/** The statement of the overall aggregations (medians excluded). */
export function overallSql(scope: Scope, aggs: AggregateSpec[], src: CellSource = RECORD_CELLS): SQL {
  const cols = aggs.filter((a) => a.fn !== 'median').map((a, i) => sql`${aggregateExpr(a, src)} AS ${sql.raw(`a${i}`)}`)
  return sql`SELECT count(*) AS n${cols.length ? sql`, ${sql.join(cols, sql`, `)}` : sql``} ${scope}`
}

/** The statement of the groups: one row per key with its count and aggregations (medians excluded). */
export function groupsSql(scope: Scope, groupBy: ColumnRef[], aggs: AggregateSpec[], src: CellSource = RECORD_CELLS): SQL {
  const keys = groupBy.map((c, i) => sql`min(${src.cell(c)}) AS ${sql.raw(`g${i}`)}`)
  const cols = aggs.filter((a) => a.fn !== 'median').map((a, i) => sql`${aggregateExpr(a, src)} AS ${sql.raw(`a${i}`)}`)
  const by = groupBy.map((c) => groupExpr(c, src))
  // Ordered by the answered keys, so nothing but the group values passes through the sort: values,
  // then the blank groups ("" and [] before null; a key is an array only as the text of one).
  const order = groupBy.flatMap((c, i) => {
    const g = sql.raw(`g${i}`)
    return [
      sql`(${g} IS NULL OR ${g} = '' OR (${g} = '[]' AND json_valid(${g})))`,
      sql`${g} IS NULL`,
      isTextual(c.kind) ? sql`${g} COLLATE NOCASE` : g,
    ]
  })
  return sql`SELECT ${sql.join([...keys, sql`count(*) AS n`, ...cols], sql`, `)} ${scope}
    GROUP BY ${sql.join(by, sql`, `)} ORDER BY ${sql.join(order, sql`, `)} LIMIT ${sql.raw(String(MAX_GROUPS))}`
}

/**
 * The median of one column (rows `m`), per group when `groupBy` is given (rows `k0…, m`): the
 * middle value, or the mean of the two middle values. Overall it is one ordered read that skips
 * to the middle (LIMIT/OFFSET from the count); per group, row numbers within each group.
 */
export function medianSql(scope: Scope, groupBy: ColumnRef[], a: AggregateSpec, src: CellSource = RECORD_CELLS): SQL {
  const x = numeric(src.cell(a.column))
  if (groupBy.length === 0) {
    const n = sql`(SELECT count(*) ${scope} AND ${x} IS NOT NULL)`
    return sql`SELECT avg(x) AS m FROM (SELECT ${x} AS x ${scope} AND ${x} IS NOT NULL ORDER BY 1 LIMIT 2 - ${n} % 2 OFFSET (${n} - 1) / 2)`
  }
  const keys = groupBy.map((c, i) => sql`${groupExpr(c, src)} AS ${sql.raw(`k${i}`)}`)
  const names = sql.join(
    groupBy.map((_, i) => sql.raw(`k${i}`)),
    sql`, `,
  )
  return sql`SELECT ${names}, avg(x) AS m FROM (
      SELECT ${names}, x, row_number() OVER w AS rn, count(*) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS cnt
      FROM (SELECT ${sql.join(keys, sql`, `)}, ${x} AS x ${scope} AND ${x} IS NOT NULL)
      WINDOW w AS (PARTITION BY ${names} ORDER BY x)
    ) WHERE rn IN ((cnt + 1) / 2, (cnt + 2) / 2) GROUP BY ${names}`
}

/** Reads an aggregate value as the column's kind (booleans back from 1/0). */
export function decodeAggregate(a: AggregateSpec, value: unknown): unknown {
  if (value === null || value === undefined) return a.fn === 'sum' ? 0 : a.fn === 'count' || a.fn === 'distinct' ? 0 : null
  if ((a.fn === 'min' || a.fn === 'max') && a.column.kind === 'boolean') return value === 1
  return typeof value === 'bigint' ? Number(value) : value
}

/**
 * A group key value as the column holds it: booleans from 1/0, and a key that is the text of a
 * JSON array (a list cell, or repeated values) as that array.
 */
export function decodeKey(column: ColumnRef, value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (typeof value === 'string' && value.startsWith('[') && value.endsWith(']')) {
    try {
      const parsed = JSON.parse(value) as unknown
      if (Array.isArray(parsed)) return parsed
    } catch {
      return value
    }
  }
  if (column.kind === 'boolean' && (value === 0 || value === 1)) return value === 1
  return value
}

/** The identity of a group for matching medians to groups: texts lowercased. */
export const groupIdentity = (values: unknown[]): string =>
  JSON.stringify(values.map((v) => (typeof v === 'string' ? v.toLowerCase() : (v ?? null))))

// --- Internal helpers ---

const groupExpr = (c: ColumnRef, src: CellSource): SQL => (isTextual(c.kind) ? sql`${src.cell(c)} COLLATE NOCASE` : src.cell(c))

/** A value when it is a number (a blank never is: the cell or the cell with blanks as null alike). */
const numeric = (x: SQL): SQL => sql`(CASE WHEN typeof(${x}) IN ('integer', 'real') THEN ${x} END)`

function aggregateExpr(a: AggregateSpec, src: CellSource): SQL {
  const text = isTextual(a.column.kind)
  const value = src.value(a.column)
  const present = text ? sql`${value} COLLATE NOCASE` : value
  const number = numeric(src.cell(a.column))
  switch (a.fn) {
    case 'count':
      return sql`count(${value})`
    case 'distinct':
      return sql`count(DISTINCT ${present})`
    case 'sum':
      return sql`sum(${number})`
    case 'average':
      return sql`avg(${number})`
    case 'min':
      return a.column.kind === 'number' ? sql`min(${number})` : sql`min(${present})`
    case 'max':
      return a.column.kind === 'number' ? sql`max(${number})` : sql`max(${present})`
    default:
      throw new Error(`${a.fn} is computed by its own statement`)
  }
}
