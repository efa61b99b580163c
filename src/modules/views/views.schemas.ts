import { z } from '@hono/zod-openapi'
import type { AggregationSpec, FilterCriterion, SortCriterion, views } from '../../db/schema.ts'
import {
  ACCEPTED_OPERATORS,
  canonicalOperator,
  LIST_OPERATORS,
  LOGICAL_OPERATORS,
  RANGE_OPERATORS,
} from '../../engine/filters/operators.ts'
import { isFilterGroup } from '../../engine/filters/resolve.ts'
import { JsonObject, QueryBoolean, TenantBody, TenantQuery, Timestamp } from '../../http/router.ts'

/** Limits of a view (views brief): filters per level, sorts, aggregations, filter nesting. */
export const MAX_FILTERS = 50
export const MAX_SORTS = 20
export const MAX_AGGREGATIONS = 20
export const MAX_FILTER_DEPTH = 5

const ColumnTitle = z.string().trim().min(1).max(255).openapi({ example: 'Age' })
const Operator = z.enum(ACCEPTED_OPERATORS).openapi({
  description: 'A filter operator (spec §2.7); eq, ne, gt, lt, gte, lte are accepted as aliases. Stored and answered as sent.',
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

const ColumnVisibility = z.record(z.string().max(255), z.boolean()).openapi({ example: { Age: true, Notes: false } })
const NameList = z.array(z.string().max(255)).max(500)

const ViewConfigIn = z
  .object({
    columns: NameList.default([]),
    groupBy: NameList.default([]),
    layout: z.string().trim().min(1).max(50).default('table'),
  })
  .passthrough()
  .openapi('ViewConfig', { example: { columns: ['Name', 'Age'], groupBy: [], layout: 'table' } })

/** On update only the keys sent are merged into the stored config (no defaults). */
const ViewConfigPatch = z
  .object({ columns: NameList.optional(), groupBy: NameList.optional(), layout: z.string().trim().min(1).max(50).optional() })
  .passthrough()

const ViewName = z.string().trim().min(1).max(255).openapi({ example: 'Over 65' })
const Description = z.string().max(1000)

export const CreateViewBody = z
  .object({
    name: ViewName,
    panelId: z.number().int().positive().openapi({ example: 1 }),
    description: Description.default(''),
    config: ViewConfigIn.default({ columns: [], groupBy: [], layout: 'table' }),
    metadata: JsonObject.default({}),
    filters: FilterList.default([]),
    sorting: SortList.default([]),
    columnVisibility: ColumnVisibility.default({}),
    aggregations: z.array(AggregationSchema).max(MAX_AGGREGATIONS).default([]),
    ...TenantBody,
  })
  .openapi('CreateView', {
    example: { name: 'Over 65', panelId: 1, config: { columns: ['Name', 'Age'], groupBy: [], layout: 'table' } },
  })

export const UpdateViewBody = z
  .object({
    name: ViewName.optional(),
    description: Description.nullable()
      .optional()
      .transform((d) => (d === null ? '' : d)),
    config: ViewConfigPatch.optional(),
    metadata: JsonObject.optional(),
    filters: FilterList.optional(),
    sorting: SortList.optional(),
    columnVisibility: ColumnVisibility.optional(),
    aggregations: z.array(AggregationSchema).max(MAX_AGGREGATIONS).optional(),
    ...TenantBody,
  })
  .openapi('UpdateView', { example: { name: 'Over 70', config: { layout: 'cards' } } })

/** `POST /api/views/{id}/copy` (the `create` permission): the copy's name and description, else the view's. */
export const CopyViewBody = z
  .object({ name: ViewName.optional(), description: Description.optional(), ...TenantBody })
  .openapi('CopyView', { example: { name: 'My follow-up list' } })

/** A body naming only the caller (delete, unpublish). */
export const ViewCallerBody = z.object({ ...TenantBody }).openapi('ViewCaller')

export const ListViewsQuery = TenantQuery.extend({
  panelId: z.coerce.number().int().positive().optional().openapi({ example: 1 }),
  published: QueryBoolean.optional().openapi({ example: 'true' }),
  limit: z.coerce.number().int().min(1).max(100).optional().openapi({ example: 50 }),
  offset: z.coerce.number().int().min(0).optional().openapi({ example: 0 }),
})

export const PublishConfigSchema = z
  .object({
    permissions: z.array(z.enum(['read', 'edit', 'create', 'delete', 'manage'])).max(5),
    userGroups: z.array(z.string().min(1).max(255)).max(100),
    publishedTitle: z.string().trim().min(1).max(255).optional(),
    description: Description.optional(),
    isDefault: z.boolean().optional(),
    expiresAt: z.iso
      .datetime({ offset: true })
      .transform((d) => new Date(d).toISOString())
      .optional(),
    passwordProtected: z.boolean().optional(),
    password: z.string().min(8).max(256).optional().openapi({
      description:
        'Write-only: the password of a passwordProtected view, given once at publish, stored as a slow salted hash and never answered. Other users send it in the X-View-Password header.',
    }),
    allowDownload: z.boolean().optional(),
    allowComments: z.boolean().optional(),
  })
  .openapi('PublishConfig', {
    description:
      'Who sees a published view and what they may do: docs/view-sharing.md (userGroups, permissions, expiresAt, password, isDefault, publishedTitle, description).',
    example: { permissions: ['read'], userGroups: [] },
  })

export type PublishConfigInput = z.infer<typeof PublishConfigSchema>

export const DEFAULT_PUBLISH_CONFIG: { permissions: string[]; userGroups: string[] } = { permissions: ['read'], userGroups: [] }

export const PublishViewBody = z
  .object({ publishConfig: PublishConfigSchema.optional(), ...TenantBody })
  .openapi('PublishView', { example: { publishConfig: { permissions: ['read'], userGroups: ['nurses'] } } })

export const View = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    name: z.string().openapi({ example: 'Over 65' }),
    description: z.string().openapi({ example: '' }),
    panelId: z.number().int().openapi({ example: 1 }),
    userId: z.string().openapi({ example: 'user-456' }),
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    isPublished: z.boolean(),
    publishedAt: Timestamp.nullable(),
    publishedBy: z.string().nullable(),
    publishConfig: JsonObject.nullable(),
    sourceViewId: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'The published view this one is a copy of (create permission), whose rows and columns bound it' }),
    config: JsonObject,
    metadata: JsonObject,
    filters: z.array(JsonObject),
    sorting: z.array(JsonObject),
    columnVisibility: z.record(z.string(), z.boolean()),
    aggregations: z.array(JsonObject),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    accessedAt: Timestamp.nullable().openapi({
      description: 'When the view’s rows were last read (rows, export), to the minute; see docs/audit.md',
    }),
    panel: z.object({ id: z.number().int(), name: z.string() }),
  })
  .openapi('View')

export const ViewList = z.object({ views: z.array(View), total: z.number().int() }).openapi('ViewList')

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

export type CreateViewInput = z.infer<typeof CreateViewBody>
export type CopyViewInput = z.infer<typeof CopyViewBody>
export type UpdateViewInput = z.infer<typeof UpdateViewBody>
export type ListViewsInput = z.infer<typeof ListViewsQuery>
export type PublishViewInput = z.infer<typeof PublishViewBody>
export type ViewRow = typeof views.$inferSelect
export type ViewDto = z.infer<typeof View>
export type { AggregationSpec, FilterCriterion, SortCriterion }

/**
 * A view as the caller sees it. The password hash of a protected view is never answered; a user who
 * sees someone else's published view sees its `publishedTitle` and `description` (publishConfig) as
 * its name and description when the publisher gave them.
 */
export const toViewDto = (row: ViewRow, panel: { id: number; name: string }, access?: { full: boolean }): ViewDto => {
  const { passwordHash: _hash, password: _password, ...publishConfig } = (row.publishConfig ?? {}) as Record<string, unknown>
  const shown = access && !access.full && row.isPublished
  const title = shown && typeof publishConfig.publishedTitle === 'string' ? publishConfig.publishedTitle : row.name
  const description = shown && typeof publishConfig.description === 'string' ? publishConfig.description : (row.description ?? '')
  return {
    id: row.id,
    name: title,
    description,
    panelId: row.panelId,
    userId: row.userId,
    tenantId: row.tenantId,
    isPublished: Boolean(row.isPublished),
    publishedAt: row.publishedAt ?? null,
    publishedBy: row.publishedBy ?? null,
    publishConfig: row.publishConfig ? publishConfig : null,
    sourceViewId: row.sourceViewId ?? null,
    config: row.config,
    metadata: row.metadata ?? {},
    filters: row.filters as unknown as Record<string, unknown>[],
    sorting: row.sorting as unknown as Record<string, unknown>[],
    columnVisibility: row.columnVisibility ?? {},
    aggregations: row.aggregations as unknown as Record<string, unknown>[],
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    accessedAt: row.accessedAt ?? null,
    panel: { id: panel.id, name: panel.name },
  }
}
