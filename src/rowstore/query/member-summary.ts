import { type SQL, sql } from 'drizzle-orm'
import { SUMMARY_GROUP_COUNT, SUMMARY_INPUT_COUNT } from '../../db/schema-live.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import type { CellSource } from './aggregate.ts'
import { cell, isBlankCell } from './filter-sql.ts'

/**
 * A view's groups and aggregations from its members (docs/views-and-rows.md "Access paths"): each
 * member of a view that groups or aggregates holds, beside its row, the value of each group column
 * (`g0` … `g3`, as the cell holds it) and of each aggregated column with blanks as null (`a0` …
 * `a3`), kept by the one write protocol like the order keys (membership.ts). The view's summary is
 * then a scan of `view_members_summary_idx` for the view, ordered by its groups, instead of the
 * panel's records: the aggregate statements of aggregate.ts, read from these values.
 *
 * The stored values are exactly what the row query reads: a group key is the cell (`g`), and an
 * aggregation reads a cell with blanks as null (`a`), whose numbers are the cell's numbers (a blank
 * is never a number). A view with more group or aggregated columns than a member holds reads its
 * summary from the records, as does one whose columns change with time alone (virtual.ts).
 */

/** The group and aggregated columns a view's members hold values of, in slot order. */
export interface MemberSummary {
  groups: ColumnRef[]
  inputs: ColumnRef[]
}

/** The identity of a column in a summary: its id, or a virtual column's name. */
const identity = (c: ColumnRef) => (c.virtual ? c.name : String(c.id))

/** The summary its members keep for a view grouping by `groups` and aggregating `aggregated`; null when it does not fit. */
export function memberSummary(groups: ColumnRef[], aggregated: ColumnRef[]): MemberSummary | null {
  if (groups.length === 0 && aggregated.length === 0) return null
  const inputs = [...new Map(aggregated.map((c) => [identity(c), c])).values()]
  if (groups.length > SUMMARY_GROUP_COUNT || inputs.length > SUMMARY_INPUT_COUNT) return null
  return { groups, inputs }
}

/** The summary's identity: what a view's membership key names of it. */
export const summaryIdentity = (s: MemberSummary | null) =>
  s ? [s.groups.map((c) => [identity(c), c.kind]), s.inputs.map((c) => [identity(c), c.kind])] : null

/** The values a member stores, over the records alias `r` (g0 … g3, then a0 … a3; unused ones null). */
function storedValues(s: MemberSummary): SQL[] {
  const groups = Array.from({ length: SUMMARY_GROUP_COUNT }, (_, i) => (s.groups[i] ? cell(s.groups[i]) : sql`NULL`))
  const inputs = Array.from({ length: SUMMARY_INPUT_COUNT }, (_, i) => {
    const c = s.inputs[i]
    return c ? sql`(CASE WHEN ${isBlankCell(c)} THEN NULL ELSE ${cell(c)} END)` : sql`NULL`
  })
  return [...groups, ...inputs]
}

/** `, value AS u0, …` of a SELECT over `r` (nothing without a summary). */
export function summaryValueColumns(s: MemberSummary | null): SQL {
  if (!s) return sql``
  return sql.join(
    storedValues(s).map((v, i) => sql`, ${v} AS ${sql.raw(`u${i}`)}`),
    sql``,
  )
}

/** The values `summaryValueColumns` selected, as columns of `alias`; null without a summary. */
export const summaryNames = (s: MemberSummary | null, alias: string): SQL[] | null =>
  s ? Array.from({ length: SUMMARY_GROUP_COUNT + SUMMARY_INPUT_COUNT }, (_, i) => sql.raw(`${alias}.u${i}`)) : null

/**
 * Where the summary statements read when the members answer: the view's summarised members (the
 * literal `sm = 1` lets SQLite use the partial index), and each column's stored value.
 */
export function memberSummarySource(
  s: MemberSummary,
  viewId: number,
): { scope: SQL; cells: CellSource; holds: (c: ColumnRef) => boolean } {
  if (!Number.isSafeInteger(viewId) || viewId <= 0) throw new Error(`invalid view id ${viewId}`)
  const group = new Map(s.groups.map((c, i) => [identity(c), i]))
  const input = new Map(s.inputs.map((c, i) => [identity(c), i]))
  const at = (c: ColumnRef): SQL => {
    const g = group.get(identity(c))
    if (g !== undefined) return sql.raw(`m.g${g}`)
    const a = input.get(identity(c))
    if (a !== undefined) return sql.raw(`m.a${a}`)
    throw new Error(`column ${c.name} is not in the view's member summary`)
  }
  return {
    scope: sql`FROM view_members m WHERE m.view_id = ${sql.raw(String(viewId))} AND m.sm = 1`,
    cells: {
      cell: at,
      value: (c) => {
        const a = input.get(identity(c))
        if (a === undefined) throw new Error(`column ${c.name} is not aggregated in the view's member summary`)
        return sql.raw(`m.a${a}`)
      },
    },
    holds: (c) => group.has(identity(c)) || input.has(identity(c)),
  }
}
