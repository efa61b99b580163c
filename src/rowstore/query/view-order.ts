import type { SortCriterion } from '../../db/schema.ts'
import { type ColumnLookup, type ColumnRef, type FilterIssue, resolveColumn } from '../../engine/filters/resolve.ts'
import type { SortKey } from './order.ts'

/**
 * The sort keys of a view's rows (DATA-ENGINE: Sorting), shared by the row query (prepare.ts) and
 * the views' stored member order (membership-plan.ts), so both sort alike: the view's groups first
 * (keys ascending, blanks last), then the request's `sort` when there is one, then the view's
 * sorting by priority (lower first; unset last, in list order), each column once.
 */

export interface ViewOrder {
  groupBy?: string[]
  sorting?: SortCriterion[]
}

/** `keys`: every sort key in order (groups first); `groupBy`: the group columns. */
export function viewSortKeys(
  view: ViewOrder,
  lookup: ColumnLookup,
  issues: FilterIssue[],
  request?: SortKey,
): { keys: SortKey[]; groupBy: ColumnRef[] } {
  const grouped: SortKey[] = (view.groupBy ?? []).flatMap((name, i) => {
    const column = resolveColumn(name, lookup, `view.config.groupBy[${i}]`, issues)
    return column ? [{ column, direction: 'asc' as const }] : []
  })
  const keys: SortKey[] = request ? [request] : []
  const sorting = (view.sorting ?? [])
    .map((s, i) => ({ s, i }))
    .sort((a, b) => (a.s.priority ?? Number.MAX_SAFE_INTEGER) - (b.s.priority ?? Number.MAX_SAFE_INTEGER) || a.i - b.i)
  for (const { s, i } of sorting) {
    const column = resolveColumn(s.columnTitle, lookup, `view.sorting[${i}].columnTitle`, issues)
    if (!column || keys.some((k) => k.column.id === column.id)) continue
    keys.push({ column, direction: s.direction, nullsFirst: s.nullsFirst, customOrder: s.customOrder })
  }
  return { keys: [...grouped, ...keys], groupBy: grouped.map((k) => k.column) }
}
