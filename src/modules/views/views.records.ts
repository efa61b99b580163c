import type { ServiceContext } from '../../context.ts'
import type { FilterCriterion, SortCriterion } from '../../db/schema.ts'
import type { FilterRecordDto, PutFiltersInput, PutSortsInput, SortRecordDto } from './views.criteria.schemas.ts'
import { loadViewFor, loadVisibleView, updateViewContent } from './views.service.ts'

/*
 * The sorts and filters sub-resources: the view's `sorting` and `filters` lists seen as records
 * (CONTRACT: Views; no separate tables). Reads follow the view's visibility, writes need `edit`
 * and go through the view's UPDATE path (change record, cache, VIEW_UPDATED when published).
 */

/**
 * Sort records in the order they apply: `order` is the priority, else the 1-based position in the
 * view's list; `id` is the record's 1-based place in that order, so records read and sent back keep
 * their ids.
 */
const toSortRecords = (sorting: SortCriterion[]): SortRecordDto[] =>
  sorting
    .map((s, i) => ({ columnName: s.columnTitle, direction: s.direction, order: s.priority ?? i + 1 }))
    .sort((a, b) => a.order - b.order)
    .map((s, i) => ({ id: i + 1, ...s }))

/** Filter records, spelled as they were sent (operators and logical operators); groups carry no column. */
const toFilterRecords = (filters: FilterCriterion[]): FilterRecordDto[] =>
  filters.map((f, i) => ({
    id: i + 1,
    ...(f.columnTitle !== undefined ? { columnName: f.columnTitle } : {}),
    ...(f.operator !== undefined ? { operator: f.operator } : {}),
    value: f.value ?? null,
    logicalOperator: f.logicalOperator ?? 'AND',
    ...(f.conditions ? { conditions: f.conditions as unknown as Record<string, unknown>[] } : {}),
  }))

/**
 * Records read back and sent again must not count as a change: the record shapes fill in
 * defaults (`order`, `logicalOperator`, `value: null`) that the stored lists may leave out. (Equal
 * sort records name the same columns, so the nullsFirst/customOrder carried over are equal too.)
 */
const sameSorts = (a: SortCriterion[], b: SortCriterion[]) =>
  JSON.stringify(toSortRecords(a)) === JSON.stringify(toSortRecords(b))

const sameFilters = (a: FilterCriterion[], b: FilterCriterion[]) =>
  JSON.stringify(toFilterRecords(a)) === JSON.stringify(toFilterRecords(b))

export async function getSorts(ctx: ServiceContext, viewId: number): Promise<{ sorts: SortRecordDto[] }> {
  const { row } = await loadVisibleView(ctx, viewId)
  return { sorts: toSortRecords(row.sorting) }
}

/**
 * Replaces the view's sorting. `order` becomes the priority; a column that was sorted before
 * keeps its `nullsFirst` and `customOrder`, which the record shape does not carry.
 */
export async function putSorts(ctx: ServiceContext, viewId: number, input: PutSortsInput): Promise<{ sorts: SortRecordDto[] }> {
  const view = await loadViewFor(ctx, viewId, 'edit', 'change the sorts')
  const before = new Map(view.row.sorting.map((s) => [s.columnTitle, s]))
  const sorting: SortCriterion[] = input.sorts.map((s) => {
    const old = before.get(s.columnName)
    return {
      columnTitle: s.columnName,
      direction: s.direction,
      ...(s.order !== undefined ? { priority: s.order } : {}),
      ...(old?.nullsFirst !== undefined ? { nullsFirst: old.nullsFirst } : {}),
      ...(old?.customOrder !== undefined ? { customOrder: old.customOrder } : {}),
    }
  })
  if (sameSorts(sorting, view.row.sorting)) return { sorts: toSortRecords(view.row.sorting) }
  const row = await updateViewContent(ctx, view, { sorting })
  return { sorts: toSortRecords(row.sorting) }
}

export async function getFilters(ctx: ServiceContext, viewId: number): Promise<{ filters: FilterRecordDto[] }> {
  const { row } = await loadVisibleView(ctx, viewId)
  return { filters: toFilterRecords(row.filters) }
}

/** Replaces the view's filters, kept as spelled (aliases and lowercase and/or are resolved when the rows are queried). */
export async function putFilters(
  ctx: ServiceContext,
  viewId: number,
  input: PutFiltersInput,
): Promise<{ filters: FilterRecordDto[] }> {
  const view = await loadViewFor(ctx, viewId, 'edit', 'change the filters')
  const filters: FilterCriterion[] = input.filters.map((f) => ({
    ...(f.columnName !== undefined ? { columnTitle: f.columnName } : {}),
    ...(f.operator !== undefined ? { operator: f.operator } : {}),
    ...(f.value !== undefined ? { value: f.value } : {}),
    ...(f.logicalOperator !== undefined ? { logicalOperator: f.logicalOperator } : {}),
    ...(f.conditions !== undefined ? { conditions: f.conditions } : {}),
  }))
  if (sameFilters(filters, view.row.filters)) return { filters: toFilterRecords(view.row.filters) }
  const row = await updateViewContent(ctx, view, { filters })
  return { filters: toFilterRecords(row.filters) }
}
