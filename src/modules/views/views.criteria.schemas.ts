import { z } from '@hono/zod-openapi'
import type { FilterCriterion } from '../../db/schema.ts'
import {
  ACCEPTED_OPERATORS,
  canonicalOperator,
  LIST_OPERATORS,
  LOGICAL_OPERATORS,
  RANGE_OPERATORS,
} from '../../engine/filters/operators.ts'
import { isFilterGroup } from '../../engine/filters/resolve.ts'
import { JsonObject, TenantBody } from '../../http/router.ts'

/**
 * The criteria of a view (spec §2.7): filters (conditions and nested groups, spelled as sent), sorts
 * and aggregations, with their limits, and the record forms of the sorts and filters sub-resources.
 * Shared by the view bodies (views.schemas.ts) and the rows endpoints' `filters` parameter.
 */
/** Limits of a view (views brief): filters per level, sorts, aggregations, filter nesting. */
export const MAX_FILTERS = 50
export const MAX_SORTS = 20
export const MAX_AGGREGATIONS = 20
export const MAX_FILTER_DEPTH = 5

const ColumnTitle = z.string().trim().min(1).max(255).openapi({ example: 'Age' })
const Operator = z.enum(ACCEPTED_OPERATORS).openapi({
  description: 'A filter operator; eq, ne, gt, lt, gte, lte are accepted as aliases. Stored and answered as sent.',
})
/** AND/OR in either case (the web client sends `and`/`or`); stored and answered as sent. */
const LogicalOperator = z.enum(LOGICAL_OPERATORS).openapi({ description: 'AND or OR, in either case' })

/** between/notBetween take a `[low, high]` pair, in/notIn a list, when a value is given. */
function checkValueShape(f: { operator?: string; value?: unknown }, ctx: z.RefinementCtx) {
  if (f.operator === undefined || f.value === undefined || f.value === null) return
  const op = canonicalOperator(f.operator)
  if (RANGE_OPERATORS.has(op) && !(Array.isArray(f.value) && f.value.length === 2)) {
    ctx.addIssue({ code: 'custom', path: ['value'], message: `${f.operator} takes a [low, high] pair` })
  } else if (LIST_OPERATORS.has(op) && !Array.isArray(f.value)) {
    ctx.addIssue({ code: 'custom', path: ['value'], message: `${f.operator} takes a list of values` })
  }
}

/**
 * A condition names its column and operator; a group (`conditions` and no column, or non-empty
 * `conditions`) needs neither (engine/filters/resolve.ts isFilterGroup).
 */
function checkCriterion(column: 'columnTitle' | 'columnName') {
  return (
    f: { columnTitle?: string; columnName?: string; operator?: string; value?: unknown; conditions?: unknown[] },
    ctx: z.RefinementCtx,
  ) => {
    if (isFilterGroup({ columnTitle: f[column], conditions: f.conditions })) return
    if (f[column] === undefined)
      ctx.addIssue({ code: 'custom', path: [column], message: `a condition needs ${column} (or conditions, for a group)` })
    if (f.operator === undefined) ctx.addIssue({ code: 'custom', path: ['operator'], message: 'a condition needs an operator' })
    checkValueShape(f, ctx)
  }
}

interface FilterCriterionIn {
  columnTitle?: string
  operator?: string
  value?: unknown
  logicalOperator?: string
  conditions?: FilterCriterionIn[]
}

export const FilterCriterionSchema: z.ZodType<FilterCriterion, FilterCriterionIn> = z
  .lazy(() =>
    z
      .object({
        columnTitle: ColumnTitle.optional(),
        operator: Operator.optional(),
        value: z.unknown().optional(),
        logicalOperator: LogicalOperator.optional(),
        conditions: z.array(FilterCriterionSchema).max(MAX_FILTERS).optional(),
      })
      .superRefine(checkCriterion('columnTitle')),
  )
  .openapi('FilterCriterion', {
    description:
      'A condition (`columnTitle`, `operator`, `value`) or a group: `conditions` combined with `logicalOperator` (default AND), nesting up to 5 levels.',
    example: { columnTitle: 'Age', operator: 'greaterThan', value: 65 },
  })

/** Nested `conditions` go at most MAX_FILTER_DEPTH levels deep (top level = 1). */
function checkDepth(list: { conditions?: FilterCriterion[] }[], ctx: z.RefinementCtx, depth = 1, path: (string | number)[] = []) {
  list.forEach((f, i) => {
    if (!f.conditions?.length) return
    if (depth >= MAX_FILTER_DEPTH) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, i, 'conditions'],
        message: `filters nest at most ${MAX_FILTER_DEPTH} levels deep`,
      })
    } else checkDepth(f.conditions, ctx, depth + 1, [...path, i, 'conditions'])
  })
}

export const FilterList = z
  .array(FilterCriterionSchema)
  .max(MAX_FILTERS)
  .superRefine((l, ctx) => checkDepth(l, ctx))

/** No two entries of a list may name the same column. */
const uniqueBy =
  <T>(key: (item: T) => string, field: string) =>
  (list: T[], ctx: z.RefinementCtx) => {
    const seen = new Set<string>()
    list.forEach((item, i) => {
      const k = key(item)
      if (seen.has(k)) ctx.addIssue({ code: 'custom', path: [i, field], message: `duplicate column "${k}"` })
      seen.add(k)
    })
  }

const Direction = z.enum(['asc', 'desc'])

export const SortCriterionSchema = z
  .object({
    columnTitle: ColumnTitle,
    direction: Direction,
    priority: z.number().int().min(0).max(1000).optional(),
    nullsFirst: z.boolean().optional(),
    customOrder: z.array(z.string().max(255)).max(1000).optional(),
  })
  .openapi('SortCriterion', { example: { columnTitle: 'Age', direction: 'desc' } })

export const SortList = z
  .array(SortCriterionSchema)
  .max(MAX_SORTS)
  .superRefine(uniqueBy((s) => s.columnTitle, 'columnTitle'))

export const AggregationSchema = z
  .object({
    columnTitle: ColumnTitle,
    function: z.enum(['count', 'sum', 'average', 'min', 'max', 'median', 'distinct']),
    alias: z.string().trim().min(1).max(255).optional(),
  })
  .openapi('Aggregation', { example: { columnTitle: 'Age', function: 'average', alias: 'Mean age' } })

/**
 * The view's sort records (`sorting`) as the sorts sub-resource shows them (CONTRACT: Views); `id` is
 * the 1-based place in the order they apply, an integer like a filter record's.
 */
export const SortRecord = z
  .object({ id: z.number().int(), columnName: z.string(), direction: Direction, order: z.number().int() })
  .openapi('ViewSort', { example: { id: 1, columnName: 'Age', direction: 'desc', order: 1 } })

export const SortRecords = z.object({ sorts: z.array(SortRecord) }).openapi('ViewSorts')

export const PutSortsBody = z
  .object({
    sorts: z
      .array(z.object({ columnName: ColumnTitle, direction: Direction, order: z.number().int().min(0).max(1000).optional() }))
      .max(MAX_SORTS)
      .superRefine(uniqueBy((s) => s.columnName, 'columnName')),
    ...TenantBody,
  })
  .openapi('PutViewSorts', { example: { sorts: [{ columnName: 'Age', direction: 'desc', order: 1 }] } })

/**
 * The view's filter records (`filters`); `id` is the 1-based position. A group record has
 * `conditions` (FilterCriteria) and no column or operator.
 */
export const FilterRecord = z
  .object({
    id: z.number().int(),
    columnName: z.string().optional(),
    operator: z.string().optional(),
    value: z.unknown(),
    logicalOperator: z.string(),
    conditions: z.array(JsonObject).optional(),
  })
  .openapi('ViewFilter', { example: { id: 1, columnName: 'Age', operator: 'greaterThan', value: 65, logicalOperator: 'AND' } })

export const FilterRecords = z.object({ filters: z.array(FilterRecord) }).openapi('ViewFilters')

export const PutFiltersBody = z
  .object({
    filters: z
      .array(
        z
          .object({
            columnName: ColumnTitle.optional(),
            operator: Operator.optional(),
            value: z.unknown().optional(),
            logicalOperator: LogicalOperator.optional(),
            conditions: z.array(FilterCriterionSchema).max(MAX_FILTERS).optional(),
          })
          .superRefine(checkCriterion('columnName')),
      )
      .max(MAX_FILTERS)
      .superRefine((list, ctx) => checkDepth(list, ctx)),
    ...TenantBody,
  })
  .openapi('PutViewFilters', {
    example: { filters: [{ columnName: 'Age', operator: 'gte', value: 65, logicalOperator: 'and' }] },
  })

export type PutSortsInput = z.infer<typeof PutSortsBody>
export type PutFiltersInput = z.infer<typeof PutFiltersBody>
export type SortRecordDto = z.infer<typeof SortRecord>
export type FilterRecordDto = z.infer<typeof FilterRecord>
