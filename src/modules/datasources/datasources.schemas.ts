import { z } from '@hono/zod-openapi'
import { DATA_SOURCE_TYPES } from '../../connectors/registry.ts'
import type { dataSources, syncRuns } from '../../db/schema.ts'
import { JsonObject, QueryBoolean, TenantBody, TenantId, Timestamp, UserId } from '../../http/router.ts'
import { CREATE_BODY_DOC, UPDATE_BODY_DOC } from './datasources.config-docs.ts'

const SyncStatus = z.enum(['pending', 'syncing', 'success', 'error', 'cancelled']).openapi({ example: 'success' })
export const DataSourceType = z.enum(DATA_SOURCE_TYPES).openapi({ example: 'api' })

const exampleConfig = {
  apiEndpoint: 'https://api.example.org/patients',
  method: 'GET',
  dataPath: '$.data',
  authentication: { type: 'bearer', token: '<SECRET>' },
}

export const SubscriptionStatus = z
  .object({
    id: z
      .string()
      .nullable()
      .openapi({ description: "The upstream Subscription's id; null while none could be made", example: '8512' }),
    status: z.string().openapi({
      description:
        'Its status: requested, active, error, off. `off` with id null: the live feed is switched off (`config.subscription.enabled: false`); with an id: the server reports it off (the maintenance tick makes it again)',
      example: 'active',
    }),
    eventsSinceStart: z.number().int().openapi({ description: 'The highest events-since-subscription-start seen', example: 42 }),
    lastNotificationAt: Timestamp.nullable(),
    error: z.string().optional().openapi({ description: 'Why the Subscription could not be made or reached' }),
  })
  .openapi('FhirSubscriptionStatus')

export const DataSource = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    panelId: z.number().int().openapi({ example: 1 }),
    type: DataSourceType,
    config: JsonObject.openapi({
      description: 'The config of its type (see the CreateDataSource schema); secrets are answered as "<SECRET>"',
      example: exampleConfig,
    }),
    syncStatus: SyncStatus,
    errorMessage: z.string().nullable().openapi({ example: null }),
    lastSyncAt: Timestamp.nullable(),
    lastSync: Timestamp.nullable().openapi({
      description: 'Alias of `lastSyncAt` (the name the upstream web client reads); always the same value',
    }),
    nextSyncAt: Timestamp.nullable().openapi({ example: null }),
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    userId: z.string().openapi({ example: 'user-456' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    subscriptionStatus: SubscriptionStatus.optional().openapi({
      description: 'A fhir source with `config.subscription`: its upstream Subscription and notifications',
    }),
  })
  .openapi('DataSource')

export const DataSourceList = z.array(DataSource).openapi('DataSourceList')

export const SyncResult = DataSource.extend({
  message: z.string().openapi({ example: '42 records synchronised from api source' }),
  status: SyncStatus,
  recordsProcessed: z.number().int().openapi({ example: 42 }),
}).openapi('SyncResult')

export const SyncRun = z
  .object({
    id: z.number().int().openapi({ example: 7 }),
    dataSourceId: z.number().int().openapi({ example: 1 }),
    status: SyncStatus,
    trigger: z.enum(['create', 'manual', 'schedule', 'webhook', 'subscription']).openapi({ example: 'manual' }),
    startedAt: Timestamp,
    finishedAt: Timestamp.nullable(),
    durationMs: z.number().int().nullable().openapi({ example: 120 }),
    rowsRead: z.number().int().openapi({ example: 42 }),
    rowsWritten: z.number().int().openapi({ example: 42 }),
    rowsDeleted: z.number().int().openapi({ example: 0 }),
    truncated: z.boolean().openapi({ example: false }),
    error: z.string().nullable().openapi({ example: null }),
  })
  .openapi('SyncRun')

export const SyncRunList = z
  .object({ syncRuns: z.array(SyncRun), total: z.number().int().openapi({ example: 1 }) })
  .openapi('SyncRunList')

export const CreateDataSourceBody = z
  .object({
    type: DataSourceType,
    config: JsonObject.openapi({ example: exampleConfig }),
    ...TenantBody,
  })
  // Documented as one schema per type; validated as before (the type's connector checks `config`).
  .openapi('CreateDataSource', CREATE_BODY_DOC)

export const UpdateDataSourceBody = z
  .object({
    type: DataSourceType.optional(),
    config: JsonObject.optional().openapi({ description: 'Replaces the config; "<SECRET>" keeps a stored secret' }),
    ...TenantBody,
  })
  .openapi('UpdateDataSource', UPDATE_BODY_DOC)

export const TenantOnlyBody = z.object({ ...TenantBody }).openapi('DataSourceCaller')

export const SyncQuery = z.object({
  async: QueryBoolean.optional().openapi({ description: 'true: answer 202 with the sync run and sync in the background' }),
  tenantId: TenantId.optional(),
  userId: UserId.optional(),
})

export const SyncRunsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).optional().default(20).openapi({ example: 20 }),
  tenantId: TenantId.optional(),
  userId: UserId.optional(),
})

export type CreateDataSourceInput = z.infer<typeof CreateDataSourceBody>
export type UpdateDataSourceInput = z.infer<typeof UpdateDataSourceBody>
export type DataSourceRow = typeof dataSources.$inferSelect
export type SyncRunRow = typeof syncRuns.$inferSelect
export type DataSourceDto = z.infer<typeof DataSource>
export type SyncRunDto = z.infer<typeof SyncRun>
export type SyncResultDto = z.infer<typeof SyncResult>

/**
 * The wire shape; `config` must already be masked (`maskConfig`). `lastSync` repeats `lastSyncAt`
 * for the upstream web client (docs/decisions.md).
 */
export const toDataSourceDto = (
  row: DataSourceRow,
  maskedConfig: Record<string, unknown>,
  subscriptionStatus?: z.infer<typeof SubscriptionStatus>,
): DataSourceDto => ({
  id: row.id,
  panelId: row.panelId,
  type: row.type as DataSourceDto['type'],
  config: maskedConfig,
  syncStatus: row.syncStatus,
  errorMessage: row.errorMessage ?? null,
  lastSyncAt: row.lastSyncAt ?? null,
  lastSync: row.lastSyncAt ?? null,
  nextSyncAt: row.nextSyncAt ?? null,
  tenantId: row.tenantId,
  userId: row.userId,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
  ...(subscriptionStatus ? { subscriptionStatus } : {}),
})

export const toSyncRunDto = (row: SyncRunRow): SyncRunDto => ({
  id: row.id,
  dataSourceId: row.dataSourceId,
  status: row.status,
  trigger: row.trigger,
  startedAt: row.startedAt,
  finishedAt: row.finishedAt ?? null,
  durationMs: row.durationMs ?? null,
  rowsRead: row.rowsRead,
  rowsWritten: row.rowsWritten,
  rowsDeleted: row.rowsDeleted,
  truncated: row.truncated,
  error: row.error ?? null,
})
