import { type SQL, sql } from 'drizzle-orm'
import { ORDER_KEY_COUNT, ORDER_KEY_NAMES, SUMMARY_NAMES } from '../../db/schema-live.ts'
import { customRank, type SortKey, sortValue } from './order.ts'

/**
 * A view's order as keys stored with each member (`view_members.s0` … `s7`), so that a page of the
 * view is a walk of one shared index, `(view_id, s0 … s7 COLLATE NOCASE, row_id)`, whatever
 * directions the view sorts in (docs/views-and-rows.md "Access paths").
 *
 * Every key is stored ascending. For each sort key of the view (its groups first, then its sorting),
 * in the order the row query sorts (order.ts `orderTerms`):
 *
 * - without a custom order, two keys: its *class*, then its *value*. The class puts blanks (null,
 *   "", []) last (first with `nullsFirst`) and the rest by SQLite's order of types (numbers, then
 *   text, then blobs; reversed for a descending key). The value is the value as it is for an
 *   ascending key; for a descending one, a number negated and a text turned into a string whose
 *   order is the reverse of the text's (`reversedText`);
 * - with a custom order, four: blank or not, the rank in the custom order, then class and value as
 *   above (the rank comes before the type, as in the row query).
 *
 * The row query compares text case-insensitively (NOCASE) in every sort, as the index does, so the
 * two give the same order; the lasting row id breaks ties in both.
 */

/** Keys per sort key: class and value; blank, rank, class and value with a custom order. */
const keysOf = (key: SortKey) => (key.customOrder?.length ? 4 : 2)

/**
 * A view's member order: the value each sort key sorts by (over the records alias `r`), and the
 * stored keys computed from those values once they are columns of a row (`x.v0`, …), so that each
 * value is read from the row's cells once, however often its keys name it.
 */
export interface MemberOrder {
  /** Per sort key, the value it sorts by (`nullif(sortValue, '')`): select each as `v0`, `v1`, … */
  values: SQL[]
  /** The stored keys, given how each value is named where they are computed. */
  keys: (value: (i: number) => SQL) => SQL[]
}

/** The member order of `keys`; null when they need more stored keys than a member holds. */
export function memberOrder(keys: SortKey[]): MemberOrder | null {
  if (keys.reduce((n, k) => n + keysOf(k), 0) > ORDER_KEY_COUNT) return null
  return {
    values: keys.map((key) => sql`nullif(${sortValue(key.column)}, '')`),
    keys: (value) => keys.flatMap((key, i) => storedKeys(key, value(i))),
  }
}

/** The names of a member order's values (`memberValueColumns`) as columns of `alias`. */
export const valueNames =
  (alias: string): ((i: number) => SQL) =>
  (i) =>
    sql.raw(`${alias}.v${i}`)

/** `value AS v0, …` for a SELECT list (nothing when the order has no keys). */
export function memberValueColumns(order: MemberOrder): SQL {
  return sql.join(
    order.values.map((v, i) => sql`, ${v} AS ${sql.raw(`v${i}`)}`),
    sql``,
  )
}

/** The stored keys of one sort key whose value (null for a blank) is `v`. */
function storedKeys(key: SortKey, v: SQL): SQL[] {
  const out: SQL[] = []
  const desc = key.direction === 'desc'
  const blank = key.nullsFirst ? 0 : 4
  if (key.customOrder?.length) {
    out.push(key.nullsFirst ? sql`(${v} IS NOT NULL)` : sql`(${v} IS NULL)`, customRank(v, key.customOrder))
  }
  // Numbers 1, text 2, blobs 3 (ascending); blobs 1, text 2, numbers 3 (descending).
  const number = desc ? 3 : 1
  const other = desc ? 1 : 3
  out.push(sql`(CASE WHEN ${v} IS NULL THEN ${sql.raw(String(blank))} ELSE (CASE typeof(${v})
    WHEN 'integer' THEN ${sql.raw(String(number))} WHEN 'real' THEN ${sql.raw(String(number))}
    WHEN 'text' THEN 2 ELSE ${sql.raw(String(other))} END) END)`)
  // A blank's value is 0 (its class alone places it): no key is ever null, so a keyset over the
  // keys compares as row values (member-page.ts).
  out.push(
    desc
      ? sql`(CASE typeof(${v}) WHEN 'integer' THEN -${v} WHEN 'real' THEN -${v} WHEN 'null' THEN 0 ELSE ${reversedText(v)} END)`
      : sql`coalesce(${v}, 0)`,
  )
  return out
}

/**
 * What a member stores beside its row: its order keys (`s0` … `s7`) and its summary values
 * (`g0` … `a3`, `sm`: member-summary.ts). A write moves them together: a member whose values
 * differ from what the write computes is re-keyed (membership.ts).
 */
export const MEMBER_VALUE_NAMES = [...ORDER_KEY_NAMES, ...SUMMARY_NAMES]

/**
 * The member values of a SELECT list, in order, each named: the order keys (unused ones 0), then
 * the summary values (`summary`: g0 … g3, a0 … a3, as member-summary.ts computes them; unused
 * ones null) and `sm` (1 when the view keeps a summary, else null).
 */
export function memberKeyValues(keys: SQL[], summary: SQL[] | null = null): SQL {
  const values = [
    ...ORDER_KEY_NAMES.map((_, i) => keys[i] ?? sql`0`),
    ...SUMMARY_NAMES.slice(0, -1).map((_, i) => summary?.[i] ?? sql`NULL`),
    summary ? sql`1` : sql`NULL`,
  ]
  return sql.join(
    MEMBER_VALUE_NAMES.map((name, i) => sql`${values[i]} AS ${sql.raw(name)}`),
    sql`, `,
  )
}

/** `s0, …, s7, g0, …, sm`, each as `name(key)` names it (e.g. `m.s0`), and `AS as(key)` when given. */
export const memberKeyColumns = (name: (key: string) => string = (k) => k, as?: (key: string) => string): string =>
  MEMBER_VALUE_NAMES.map((k) => (as ? `${name(k)} AS ${as(k)}` : name(k))).join(', ')

/** The order keys alone (`s0` … `s7`), each as `name(key)` names it. */
export const orderKeyColumns = (name: (key: string) => string = (k) => k): string => ORDER_KEY_NAMES.map(name).join(', ')

/** The order keys and the row id as the shared index compares them (alias `m`): an ORDER BY, or a row value. */
export const memberOrderBy = (alias = 'm'): string =>
  [...ORDER_KEY_NAMES.map((k) => `${alias}.${k} COLLATE NOCASE`), `${alias}.row_id`].join(', ')

/**
 * The members after the one whose keys and row id are `last` (s0 … s7, row_id), in the index's
 * order: one row-value comparison of the bare columns (the index seeks to it), NOCASE given on the
 * right-hand side (no key is null).
 */
export const membersAfter = (last: unknown[], alias = 'm'): SQL => {
  const columns = [...ORDER_KEY_NAMES, 'row_id'].map((k) => `${alias}.${k}`).join(', ')
  const values = last.map((v, i) => (i < ORDER_KEY_NAMES.length ? sql`${v} COLLATE NOCASE` : sql`${v}`))
  return sql`(${sql.raw(columns)}) > (${sql.join(values, sql`, `)})`
}

/** Some member value differs between two sets of the same values, as `a(key)` and `b(key)` name them. */
export const memberKeysDiffer = (a: (key: string) => string, b: (key: string) => string): string =>
  `(${MEMBER_VALUE_NAMES.map((k) => `${a(k)} IS NOT ${b(k)}`).join(' OR ')})`

/**
 * A text whose ascending order (case-insensitive, as the index compares) is the descending order
 * of `v` compared NOCASE: `v` with ASCII letters folded to lower case (what NOCASE compares), its
 * bytes in hex, each hex digit d written as the letter ('v' - d) so that bigger bytes sort
 * first, and a final 'w', above every digit letter, so that a text sorts after every longer text
 * it begins (the longer is bigger, so first in a descending order).
 */
function reversedText(v: SQL): SQL {
  let out: SQL = sql`hex(lower(${v}))`
  const digits = '0123456789ABCDEF'
  for (let d = 0; d < 16; d++) {
    out = sql`replace(${out}, ${sql.raw(`'${digits[d]}'`)}, ${sql.raw(`'${String.fromCharCode('v'.charCodeAt(0) - d)}'`)})`
  }
  return sql`(${out} || 'w')`
}
