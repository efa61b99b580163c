import { z } from '@hono/zod-openapi'
import type { panels } from '../../db/schema.ts'
import { ACCEPTED_OPERATORS, canonicalOperator, LOGICAL_OPERATORS } from '../../engine/filters/operators.ts'
import { JsonObject, TenantBody, TenantId, Timestamp, UserId } from '../../http/router.ts'

export const CohortCondition = z
  .object({
    field: z.string().min(1).max(255),
    operator: z.enum(ACCEPTED_OPERATORS).transform(canonicalOperator),
    value: z.unknown().optional(),
  })
  .openapi('CohortCondition')

export const CohortRule = z
  .object({
    conditions: z.array(CohortCondition).max(100),
    logic: z.enum(LOGICAL_OPERATORS).openapi({ description: 'AND or OR, in either case; kept as sent' }),
  })
  .openapi('CohortRule', { example: { conditions: [], logic: 'AND' } })

const PanelMetadata = z
  .object({
    tags: z.array(z.string().max(100)).max(50).optional(),
    isPublic: z.boolean().optional(),
    settings: z
      .object({
        theme: z.enum(['light', 'dark', 'auto']).optional(),
        refreshInterval: z.number().int().min(0).optional(),
        enableExport: z.boolean().optional(),
        enableComments: z.boolean().optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough()
  .openapi('PanelMetadata')

const CohortRuleOut = z
  .object({
    conditions: z.array(z.object({ field: z.string(), operator: z.string(), value: z.unknown().optional() })),
    logic: z.enum(LOGICAL_OPERATORS),
  })
  .openapi('CohortRuleResult', { example: { conditions: [], logic: 'AND' } })

export const Panel = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    name: z.string().openapi({ example: 'Diabetes follow-up' }),
    description: z.string().nullable().openapi({ example: 'Patients with HbA1c > 7 %' }),
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    userId: z.string().openapi({ example: 'user-456' }),
    metadata: JsonObject.nullable().optional(),
    cohortRule: CohortRuleOut,
    defaultViewId: z
      .number()
      .int()
      .nullable()
      .openapi({ description: 'The published view its publisher marked isDefault (publishConfig), if any', example: 3 }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('Panel')

export const PanelList = z.array(Panel).openapi('PanelList')

export const CreatePanelBody = z
  .object({
    name: z.string().trim().min(1).max(255).openapi({ example: 'Diabetes follow-up' }),
    description: z.string().max(1000).nullable().optional().openapi({ example: 'Patients with HbA1c > 7 %' }),
    metadata: PanelMetadata.optional(),
    tenantId: TenantId,
    userId: UserId,
  })
  .openapi('CreatePanel')

export const UpdatePanelBody = z
  .object({
    name: z.string().trim().min(1).max(255).optional(),
    description: z.string().max(1000).nullable().optional(),
    metadata: PanelMetadata.optional(),
    cohortRule: CohortRule.optional(),
    ...TenantBody,
  })
  .openapi('UpdatePanel', { example: { name: 'Renamed panel', tenantId: 'tenant-123', userId: 'user-456' } })

export const DeletePanelBody = z.object({ ...TenantBody }).openapi('DeletePanel')

export const ListPanelsQuery = z.object({
  tenantId: TenantId,
  userId: UserId,
  page: z.coerce.number().int().min(1).optional().openapi({ example: 1 }),
  limit: z.coerce.number().int().min(1).max(100).optional().openapi({ example: 50 }),
  sort: z.enum(['name', 'createdAt', 'updatedAt']).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  search: z.string().max(255).optional(),
})

export type CreatePanelInput = z.infer<typeof CreatePanelBody>
export type UpdatePanelInput = z.infer<typeof UpdatePanelBody>
export type ListPanelsInput = z.infer<typeof ListPanelsQuery>
export type PanelRow = typeof panels.$inferSelect
export type PanelDto = z.infer<typeof Panel>

export const toPanelDto = (row: PanelRow): PanelDto => ({
  id: row.id,
  name: row.name,
  description: row.description ?? null,
  tenantId: row.tenantId,
  userId: row.userId,
  metadata: row.metadata ?? null,
  cohortRule: row.cohortRule,
  defaultViewId: row.defaultViewId ?? null,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
})
