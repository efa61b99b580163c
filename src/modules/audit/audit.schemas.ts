import { z } from '@hono/zod-openapi'
import type { AccessAction, AccessOutcome, accessRecords } from '../../db/schema-access.ts'
import { OffsetPaging, refuseOffsetWithPage } from '../../http/offset-paging.ts'
import { TenantId, Timestamp, UserId } from '../../http/router.ts'
import { QueryId, QueryTimestamp } from '../changes/changes.schemas.ts'

export const ACCESS_ACTIONS = ['read', 'export', 'stream', 'import'] as const satisfies readonly AccessAction[]
export const ACCESS_OUTCOMES = [
  'success',
  'invalid',
  'denied',
  'not_found',
  'cancelled',
  'failed',
] as const satisfies readonly AccessOutcome[]

/** The media type of the FHIR answer (a Bundle of AuditEvent resources). */
export const FHIR_JSON = 'application/fhir+json'

export const ListAccessQuery = z
  .object({
    tenantId: TenantId.optional(),
    user: UserId.optional().openapi({ description: 'Only records of this user' }),
    panelId: QueryId.optional(),
    viewId: QueryId.optional(),
    action: z.enum(ACCESS_ACTIONS).optional(),
    from: QueryTimestamp.optional().openapi({ description: 'Only records at or after this instant (inclusive)' }),
    to: QueryTimestamp.optional().openapi({ description: 'Only records before this instant (exclusive)' }),
    ...OffsetPaging,
  })
  .superRefine((q, ctx) => {
    refuseOffsetWithPage(q, ctx)
    if (q.from !== undefined && q.to !== undefined && q.from > q.to) {
      ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' })
    }
  })

export const AccessRecordSchema = z
  .object({
    id: z.number().int(),
    at: Timestamp,
    tenantId: z.string(),
    userId: z.string(),
    action: z.enum(ACCESS_ACTIONS),
    panelId: z.number().int().nullable(),
    viewId: z.number().int().nullable(),
    dataSourceId: z.number().int().nullable(),
    rowCount: z.number().int(),
    query: z.record(z.string(), z.unknown()),
    path: z.string(),
    requestId: z.string(),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    outcome: z.enum(ACCESS_OUTCOMES),
    status: z.number().int(),
    errorCode: z.string().nullable(),
  })
  .openapi('AccessRecord', {
    example: {
      id: 1,
      at: '2026-01-01T12:00:00.000Z',
      tenantId: 'tenant-123',
      userId: 'user-456',
      action: 'read',
      panelId: 1,
      viewId: 2,
      dataSourceId: null,
      rowCount: 50,
      query: { limit: '50', sort: 'Age' },
      path: '/api/views/2/rows',
      requestId: '4b4e5c3a-7e0f-4d5b-9a53-2f1a2c3d4e5f',
      ip: '203.0.113.7',
      userAgent: 'Mozilla/5.0',
      outcome: 'success',
      status: 200,
      errorCode: null,
    },
  })

export const AccessPage = z
  .object({
    records: z.array(AccessRecordSchema),
    total: z.number().int().openapi({ description: 'Records matching the filters' }),
    hasMore: z.boolean().openapi({ description: 'More records follow this page' }),
  })
  .openapi('AccessPage')

export type ListAccessInput = z.infer<typeof ListAccessQuery>
export type AccessRow = typeof accessRecords.$inferSelect
export type AccessDto = z.infer<typeof AccessRecordSchema>
export type AccessPageDto = z.infer<typeof AccessPage>

export const toAccessDto = (row: AccessRow): AccessDto => ({
  id: row.id,
  at: row.at,
  tenantId: row.tenantId,
  userId: row.userId,
  action: row.action,
  panelId: row.panelId ?? null,
  viewId: row.viewId ?? null,
  dataSourceId: row.dataSourceId ?? null,
  rowCount: row.rowCount,
  query: row.query,
  path: row.path,
  requestId: row.requestId,
  ip: row.ip ?? null,
  userAgent: row.userAgent ?? null,
  outcome: row.outcome,
  status: row.status,
  errorCode: row.errorCode ?? null,
})
