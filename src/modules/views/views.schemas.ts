import { z } from '@hono/zod-openapi'
import type { AggregationSpec, FilterCriterion, SortCriterion, views } from '../../db/schema.ts'
import { JsonObject, QueryBoolean, TenantBody, TenantQuery, Timestamp } from '../../http/router.ts'
import { viewPayload } from '../../rowstore/view-payload.ts'
import { AggregationSchema, FilterList, MAX_AGGREGATIONS, SortList } from './views.criteria.schemas.ts'

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

export type CreateViewInput = z.infer<typeof CreateViewBody>
export type CopyViewInput = z.infer<typeof CopyViewBody>
export type UpdateViewInput = z.infer<typeof UpdateViewBody>
export type ListViewsInput = z.infer<typeof ListViewsQuery>
export type PublishViewInput = z.infer<typeof PublishViewBody>
export type ViewRow = typeof views.$inferSelect
export type ViewDto = z.infer<typeof View>
export type { AggregationSpec, FilterCriterion, SortCriterion }

/** A view as the caller sees it (src/rowstore/view-payload.ts, which the events share). */
export const toViewDto = (row: ViewRow, panel: { id: number; name: string }, access?: { full: boolean }): ViewDto =>
  viewPayload(row, panel, access)
