import { type SQL, sql } from 'drizzle-orm'
import { isTextual } from '../../engine/filters/kinds.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import { cell, cellPath, isArrayCell } from './filter-sql.ts'

/**
 * ORDER BY of a row query (DATA-ENGINE: Sorting): keys in priority order, each with blanks last
 * unless `nullsFirst`, then the `customOrder` values in their listed order, then the rest in the
 * key's direction (text case-insensitively, booleans false before true, ISO dates as instants);
 * the record id breaks ties so pages are stable. An array cell sorts by its first element. Blanks are
 * null, "" and [] alike (docs/views-and-rows.md "Exact values").
 */

export interface SortKey {
  column: ColumnRef
  direction: 'asc' | 'desc'
  nullsFirst?: boolean
  customOrder?: string[]
}

/** Custom orders up to this many values are a CASE of parameters; longer ones one JSON parameter. */
const INLINE_CUSTOM_ORDER = 20

export function orderSql(keys: SortKey[]): SQL {
  const parts: SQL[] = []
  for (const key of keys) {
    // Blanks (null, "", and [] whose first element is null) sort as one: their ties go to the row id.
    const v = sql`nullif(${sortValue(key.column)}, '')`
    parts.push(sql`(${v} IS NULL) ${sql.raw(key.nullsFirst ? 'DESC' : 'ASC')}`)
    if (key.customOrder?.length) parts.push(customRank(v, key.customOrder))
    const dir = sql.raw(key.direction === 'desc' ? 'DESC' : 'ASC')
    parts.push(isTextual(key.column.kind) ? sql`${v} COLLATE NOCASE ${dir}` : sql`${v} ${dir}`)
  }
  parts.push(sql`r.id ASC`)
  return sql.join(parts, sql`, `)
}

/** The value a column sorts by: the cell, or its first element when it holds an array. */
export const sortValue = (column: ColumnRef): SQL =>
  sql`(CASE WHEN ${isArrayCell(column.id)} THEN ${sql.raw(`r.cells ->> ${cellPath(column.id).replace(/'$/, "[0]'")}`)} ELSE ${cell(column.id)} END)`

/** 0, 1, … for the listed values (compared case-insensitively as text), the list's length for the rest. */
function customRank(v: SQL, order: string[]): SQL {
  const text = sql`lower(CAST(${v} AS TEXT))`
  const lowered = order.map((o) => o.toLowerCase())
  if (lowered.length <= INLINE_CUSTOM_ORDER) {
    const whens = lowered.map((o, i) => sql`WHEN ${o} THEN ${sql.raw(String(i))}`)
    return sql`CASE ${text} ${sql.join(whens, sql` `)} ELSE ${sql.raw(String(lowered.length))} END ASC`
  }
  return sql`ifnull((SELECT min(key) FROM json_each(${JSON.stringify(lowered)}) WHERE value = ${text}), ${sql.raw(String(lowered.length))}) ASC`
}
