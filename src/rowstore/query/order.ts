import { type SQL, sql } from 'drizzle-orm'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import { cell, cellPath, isArrayCell } from './filter-sql.ts'

/**
 * ORDER BY of a row query (DATA-ENGINE: Sorting): keys in priority order, each with blanks last
 * unless `nullsFirst`, then the `customOrder` values in their listed order, then the rest in the
 * key's direction (text case-insensitively in every kind, booleans false before true, ISO dates as
 * instants); the row's lasting id (`_id`) breaks ties, so pages are stable and a row keeps its
 * place among equals across re-syncs. Views' stored member keys (member-order.ts) give the same order. An array cell sorts by its first element. Blanks are
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

/**
 * One term of an ORDER BY: a value, its direction and (text kinds) NOCASE. The terms of a row query
 * are its sort; the record id (ascending) follows them. Exports walk the same terms as a keyset
 * (`afterSql`), so what they stream is in exactly the order the rows endpoints page.
 */
export interface OrderTerm {
  value: SQL
  desc: boolean
  nocase: boolean
}

/** The terms of `keys`, in order: per key its blank flag, its custom rank (if any), then its value. */
export function orderTerms(keys: SortKey[]): OrderTerm[] {
  const terms: OrderTerm[] = []
  for (const key of keys) {
    // Blanks (null, "", and [] whose first element is null) sort as one: their ties go to the row id.
    const v = sql`nullif(${sortValue(key.column)}, '')`
    terms.push({ value: sql`(${v} IS NULL)`, desc: key.nullsFirst === true, nocase: false })
    if (key.customOrder?.length) terms.push({ value: customRank(v, key.customOrder), desc: false, nocase: false })
    // Case-insensitive whatever the kind (a date or a number column may hold text too): as the member index compares.
    terms.push({ value: v, desc: key.direction === 'desc', nocase: true })
  }
  return terms
}

/** ORDER BY of the terms, then the lasting row id (`id`: how the query names it). */
export function orderByTerms(terms: OrderTerm[], id = 'r.row_id'): SQL {
  const parts = terms.map((t) => sql`${compared(t)} ${sql.raw(t.desc ? 'DESC' : 'ASC')}`)
  parts.push(sql.raw(`${id} ASC`))
  return sql.join(parts, sql`, `)
}

export const orderSql = (keys: SortKey[]): SQL => orderByTerms(orderTerms(keys))

/**
 * The rows after one row in the order of `terms`, then `id`: the first term whose value differs
 * decides (`IS` makes two blanks, i.e. nulls, equal). The row's values are read from `last`, a
 * one-row table with columns `k0`, `k1`, … and `id` that the caller binds, so each value is one
 * parameter however many alternatives name it (D1 allows 100 per statement).
 */
export function afterSql(terms: OrderTerm[], id: string, last: string): SQL {
  const at = (column: string) => sql.raw(`(SELECT ${column} FROM ${last})`)
  const alternatives: SQL[] = []
  for (let i = 0; i <= terms.length; i++) {
    const equal = terms.slice(0, i).map((t, j) => sql`${compared(t)} IS ${at(`k${j}`)}`)
    const beyond =
      i < terms.length
        ? sql`${compared(terms[i])} ${sql.raw(terms[i].desc ? '<' : '>')} ${at(`k${i}`)}`
        : sql`${sql.raw(id)} > ${at('id')}`
    alternatives.push(sql`(${sql.join([...equal, beyond], sql` AND `)})`)
  }
  return sql`(${sql.join(alternatives, sql` OR `)})`
}

/** The value a column sorts by: the cell, or its first element when it holds an array. */
export const sortValue = (column: ColumnRef): SQL =>
  column.virtual
    ? cell(column)
    : sql`(CASE WHEN ${isArrayCell(column)} THEN ${sql.raw(`r.cells ->> ${cellPath(column.id).replace(/'$/, "[0]'")}`)} ELSE ${cell(column)} END)`

/** 0, 1, … for the listed values (compared case-insensitively as text), the list's length for the rest. */
export function customRank(v: SQL, order: string[]): SQL {
  const text = sql`lower(CAST(${v} AS TEXT))`
  const lowered = order.map((o) => o.toLowerCase())
  if (lowered.length <= INLINE_CUSTOM_ORDER) {
    const whens = lowered.map((o, i) => sql`WHEN ${o} THEN ${sql.raw(String(i))}`)
    return sql`(CASE ${text} ${sql.join(whens, sql` `)} ELSE ${sql.raw(String(lowered.length))} END)`
  }
  return sql`ifnull((SELECT min(key) FROM json_each(${JSON.stringify(lowered)}) WHERE value = ${text}), ${sql.raw(String(lowered.length))})`
}

/** A term's value as it is compared: text kinds case-insensitively. */
const compared = (t: OrderTerm): SQL => (t.nocase ? sql`${t.value} COLLATE NOCASE` : t.value)
