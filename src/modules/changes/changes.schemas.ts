import { z } from '@hono/zod-openapi'
import type { ChangeAction, ChangeEntity, changes } from '../../db/schema.ts'
import { OffsetPaging, refuseOffsetWithPage } from '../../http/offset-paging.ts'
import { TenantId, Timestamp, UserId } from '../../http/router.ts'

export const CHANGE_ENTITIES = [
  'Panel',
  'DataSource',
  'Column',
  'View',
  'row',
  'comment',
] as const satisfies readonly ChangeEntity[]
export const CHANGE_ACTIONS = ['CREATE', 'UPDATE', 'DELETE', 'PUBLISH', 'SYNC'] as const satisfies readonly ChangeAction[]

/** An ISO 8601 date or date-time: `2026-01-01`, `2026-01-01T12:00Z`, `…T12:00:00.000+02:00`. */
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i

/** Date.parse rolls 2026-02-31 over to March; a day past the month's end is an error instead. */
function realDate(value: string) {
  const [y, m, d] = value.slice(0, 10).split('-').map(Number)
  return m >= 1 && m <= 12 && d >= 1 && d <= new Date(Date.UTC(y, m, 0)).getUTCDate()
}

/**
 * A timestamp in the query, normalised to the stored form (UTC, milliseconds) so it compares as
 * text with `created_at`. A date-time without an offset is read as UTC, never as server-local time.
 */
export const QueryTimestamp = z
  .string()
  .transform((value, ctx) => {
    const withZone = /T[^Z+-]*$/i.test(value) ? `${value}Z` : value
    const ms = ISO_TIMESTAMP.test(value) && realDate(value) ? Date.parse(withZone) : Number.NaN
    if (Number.isNaN(ms)) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 timestamp, e.g. 2026-01-01T12:00:00.000Z' })
      return z.NEVER
    }
    return new Date(ms).toISOString()
  })
  .openapi({ type: 'string', format: 'date-time', example: '2026-01-01T00:00:00.000Z' } as never)

export const QueryId = z
  .string()
  .regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')
  .transform(Number)
  .openapi({ type: 'integer', minimum: 1, example: 1 } as never)

export const ListChangesQuery = z
  .object({
    tenantId: TenantId.optional(),
    userId: UserId.optional(),
    since: QueryTimestamp.optional().openapi({ description: 'Only changes at or after this instant (inclusive)' }),
    panelId: QueryId.optional(),
    entityType: z.enum(CHANGE_ENTITIES).optional(),
    action: z.enum(CHANGE_ACTIONS).optional(),
    ...OffsetPaging,
  })
  .superRefine(refuseOffsetWithPage)

const FieldChange = z
  .object({ oldValue: z.unknown().optional(), newValue: z.unknown().optional() })
  .openapi('FieldChange', { example: { oldValue: 'Old name', newValue: 'New name' } })

export const Change = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    panelId: z.number().int().openapi({ example: 1 }),
    entityType: z.enum(CHANGE_ENTITIES).openapi({ example: 'Panel' }),
    entityId: z.number().int().openapi({ example: 1 }),
    action: z.enum(CHANGE_ACTIONS).openapi({ example: 'UPDATE' }),
    changes: z.record(z.string(), FieldChange),
    metadata: z
      .object({
        userAgent: z.string().optional(),
        ipAddress: z.string().optional(),
        source: z.enum(['api', 'system', 'web']),
      })
      .openapi({ example: { source: 'api', userAgent: 'curl/8.5.0', ipAddress: '203.0.113.7' } }),
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    userId: z.string().openapi({ example: 'user-456' }),
    createdAt: Timestamp,
  })
  .openapi('Change')

export const ChangePage = z
  .object({
    changes: z.array(Change),
    total: z.number().int().openapi({ example: 1, description: 'Changes matching the filters' }),
    hasMore: z.boolean().openapi({ example: false, description: 'More changes follow this page' }),
  })
  .openapi('ChangePage')

export type ListChangesInput = z.infer<typeof ListChangesQuery>
export type ChangeRow = typeof changes.$inferSelect
export type ChangeDto = z.infer<typeof Change>
export type ChangePageDto = z.infer<typeof ChangePage>

export const toChangeDto = (row: ChangeRow): ChangeDto => ({
  id: row.id,
  panelId: row.panelId,
  entityType: row.entityType,
  entityId: row.entityId,
  action: row.action,
  changes: row.changes,
  metadata: row.metadata,
  tenantId: row.tenantId,
  userId: row.userId,
  createdAt: row.createdAt,
})
