import { and, asc, count, desc, eq, sql } from 'drizzle-orm'
import { isFileSourceType } from '../../connectors/file.ts'
import { connectorFor } from '../../connectors/registry.ts'
import type { ServiceContext } from '../../context.ts'
import { columns, dataSources, syncRuns, webhookEvents } from '../../db/schema.ts'
import { records } from '../../db/schema-records.ts'
import { AppError, invalid, issuesToDetails, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { noFileStoreMessage } from '../../lib/files.ts'
import { rowWrite, writeRows } from '../../rowstore/write.ts'
import { changeInsert, createdFields } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { startCatchUp } from './datasources.fhir-catch-up.ts'
import {
  reconcileSubscription,
  removeSubscription,
  requirePublicBaseUrl,
  subscriptionOf,
  subscriptionStatusOf,
} from './datasources.fhir-subscription.ts'
import { nextSyncAt, scheduleIssues } from './datasources.schedule.ts'
import {
  type CreateDataSourceInput,
  type DataSourceDto,
  type DataSourceRow,
  type SyncResultDto,
  type SyncRunDto,
  toDataSourceDto,
  toSyncRunDto,
  type UpdateDataSourceInput,
} from './datasources.schemas.ts'
import { maskConfig, sealConfig, unsealConfig } from './datasources.secrets.ts'
import { requestCancel, runSync, runSyncInBackground } from './datasources.sync.ts'
import type { SyncOutcome } from './datasources.sync-end.ts'
import { claimWebhookEndpoint, refusePull } from './datasources.webhooks.ts'

const dto = async (ctx: ServiceContext, row: DataSourceRow) =>
  toDataSourceDto(row, await maskConfig(ctx.secrets, row.config), await subscriptionStatusOf(ctx, row))

/** A type with a connector validates its config now (400 naming `config.<field>`); others later. */
function validateConfig(ctx: ServiceContext, type: string, config: Record<string, unknown>) {
  if (isFileSourceType(type) && !ctx.files) {
    throw invalid(
      [{ path: 'type', message: noFileStoreMessage(ctx.runtime, 'A file data source') }],
      `'${type}' sources need file storage, which the ${ctx.runtime} runtime was not given`,
    )
  }
  const connector = connectorFor(type)
  const parsed = connector?.configSchema.safeParse(config)
  const issues = [...(parsed && !parsed.success ? issuesToDetails(parsed.error.issues, 'config') : []), ...scheduleIssues(config)]
  if (issues.length > 0) throw invalid(issues, `Invalid ${type} data source config`)
  requirePublicBaseUrl(ctx, type, config)
}

/** 404 unless the caller may reach the panel: another tenant's, user's or a deleted panel. */
async function panelOrNotFound(ctx: ServiceContext, panelId: number, sourceId: number) {
  try {
    return await requirePanel(ctx, panelId)
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND') throw notFound('Data source', sourceId, ctx.scope.tenantId)
    throw err
  }
}

/** Where the caller addressed a source: `panelId` when it came through a nested alias route. */
export interface SourceAddress {
  panelId?: number
}

/**
 * The data source as the caller may reach it (CONTRACT: Ownership): it belongs to its panel's
 * owner, so another tenant's or user's source, or one under a deleted panel, is a 404 — and so is
 * one of another panel than the `panelId` it was addressed under.
 */
export async function requireDataSource(ctx: ServiceContext, id: number, at: SourceAddress = {}): Promise<DataSourceRow> {
  const [row] = await ctx.db
    .select()
    .from(dataSources)
    .where(
      and(
        eq(dataSources.id, id),
        eq(dataSources.tenantId, ctx.scope.tenantId),
        at.panelId === undefined ? undefined : eq(dataSources.panelId, at.panelId),
      ),
    )
    .limit(1)
  if (!row) throw notFound('Data source', id, ctx.scope.tenantId)
  await panelOrNotFound(ctx, row.panelId, id)
  return row
}

/** The panel's data sources in creation order. */
export async function listDataSources(ctx: ServiceContext, panelId: number): Promise<DataSourceDto[]> {
  await requirePanel(ctx, panelId)
  const rows = await ctx.db
    .select()
    .from(dataSources)
    .where(and(eq(dataSources.tenantId, ctx.scope.tenantId), eq(dataSources.panelId, panelId)))
    .orderBy(asc(dataSources.id))
  return Promise.all(rows.map((r) => dto(ctx, r)))
}

/**
 * Creates the source (`pending`, secrets encrypted) with its CREATE change in one batch, then runs
 * the initial sync before answering (spec §3, §4.7 rule 4). A failing sync still answers the
 * created source, with `syncStatus: 'error'` (CONTRACT: DataSource).
 */
export async function createDataSource(
  ctx: ServiceContext,
  panelId: number,
  input: CreateDataSourceInput,
): Promise<DataSourceDto> {
  const panel = await requirePanel(ctx, panelId)
  validateConfig(ctx, input.type, input.config)
  const now = isoNow(ctx.clock)
  const values = {
    tenantId: ctx.scope.tenantId,
    userId: panel.userId,
    panelId,
    type: input.type,
    config: await sealConfig(ctx.secrets, input.config),
    webhookEndpoint: await claimWebhookEndpoint(ctx, input.type, input.config),
    syncStatus: 'pending' as const,
    createdAt: now,
    updatedAt: now,
  }
  const id = sql`last_insert_rowid()`
  const [inserted] = await ctx.db.batch([
    ctx.db.insert(dataSources).values(values).returning(),
    changeInsert(ctx, {
      panelId,
      entityType: 'DataSource',
      entityId: id,
      action: 'CREATE',
      changes: createdFields({ type: values.type, config: await maskConfig(ctx.secrets, values.config) }, ['type', 'config']),
    }),
  ])
  // A webhook source is pushed to: it stays `pending` until its first delivery.
  if (input.type === 'webhook') return dto(ctx, inserted[0] as DataSourceRow)
  // A live fhir source registers its Subscription first: what changes during the initial sync is
  // notified (or caught up), never lost between the two.
  await reconcileSubscription(ctx, (inserted[0] as DataSourceRow).id)
  const outcome = await runSync(ctx, inserted[0] as DataSourceRow, 'create')
  // Notifications that met the initial sync owe a catch-up: it runs now rather than at the next tick.
  if (await subscriptionOf(ctx, outcome.source.id)) startCatchUp(ctx, outcome.source.id)
  return dto(ctx, outcome.source)
}

/**
 * Updates type and/or config. The config is replaced as a whole; "<SECRET>" keeps the stored
 * secret. Records the diff (secrets masked) and warns the owners of the panel's views.
 */
export async function updateDataSource(
  ctx: ServiceContext,
  id: number,
  input: UpdateDataSourceInput,
  at: SourceAddress = {},
): Promise<DataSourceDto> {
  const before = await requireDataSource(ctx, id, at)
  const type = input.type ?? before.type
  const config = input.config === undefined ? before.config : await sealConfig(ctx.secrets, input.config, before.config)
  if (input.type !== undefined || input.config !== undefined) {
    validateConfig(ctx, type, input.config === undefined ? await unsealConfig(ctx.secrets, before.config) : input.config)
  }
  const diff: Record<string, { oldValue: unknown; newValue: unknown }> = {}
  if (type !== before.type) diff.type = { oldValue: before.type, newValue: type }
  if (input.config !== undefined) {
    const [oldPlain, newPlain] = await Promise.all([unsealConfig(ctx.secrets, before.config), unsealConfig(ctx.secrets, config)])
    if (JSON.stringify(oldPlain) !== JSON.stringify(newPlain)) {
      diff.config = { oldValue: await maskConfig(ctx.secrets, before.config), newValue: await maskConfig(ctx.secrets, config) }
    }
  }
  if (Object.keys(diff).length === 0) return dto(ctx, before)
  const [[row]] = await ctx.db
    .batch([
      ctx.db
        .update(dataSources)
        .set({
          type,
          config,
          webhookEndpoint: await claimWebhookEndpoint(ctx, type, await unsealConfig(ctx.secrets, config), id),
          nextSyncAt: nextSyncAt(config, ctx.clock.now()),
          updatedAt: isoNow(ctx.clock),
        })
        .where(and(eq(dataSources.id, id), eq(dataSources.tenantId, ctx.scope.tenantId)))
        .returning(),
      // The guard: a source deleted since it was read fails the batch (json() of a text that is not
      // JSON), so no change record or notice is written for it.
      ctx.db.run(sql`SELECT json('deleted meanwhile') WHERE NOT EXISTS (SELECT 1 FROM data_sources WHERE id = ${id})`),
      changeInsert(ctx, { panelId: before.panelId, entityType: 'DataSource', entityId: id, action: 'UPDATE', changes: diff }),
      notifyViewOwners(ctx, {
        panelId: before.panelId,
        type: 'DATA_CHANGED',
        impact: 'warning',
        message: `Data source ${id} (${type}) was updated (${Object.keys(diff).join(', ')})`,
      }),
    ])
    .catch(async (err) => {
      // The guard failed: a 404 when the source is gone (else the error as it was).
      await requireDataSource(ctx, id, at)
      throw err
    })
  // Its upstream Subscription follows the new config: made, replaced, deleted (the subscription
  // removed or switched off) or left as it is. One made anew owes a catch-up of the moments none
  // was registered (a feed switched on again): it runs now rather than at the handshake or tick.
  if (await reconcileSubscription(ctx, id, before)) startCatchUp(ctx, id)
  return dto(ctx, row as DataSourceRow)
}

/**
 * Deletes the source with everything that hangs on it: records, sync runs and webhook event ids,
 * and unlinks columns that read from it (one batch). The dependants are deleted here, not left to
 * `ON DELETE CASCADE`: foreign keys are a per-connection setting that a remote libSQL stream need
 * not have (docs/runtimes.md "Connection state").
 */
export async function deleteDataSource(ctx: ServiceContext, id: number, at: SourceAddress = {}): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const before = await requireDataSource(ctx, id, at)
    // The upstream Subscription goes first, while its config is still there to reach the server.
    await removeSubscription(ctx, before)
    try {
      await removeSource(ctx, before)
      return
    } catch (err) {
      // An update racing the delete made a Subscription after it was removed (the batch's guard):
      // it is removed too, with the source as that update left it, and the removal tried again.
      if (attempt >= 3 || !(await subscriptionOf(ctx, id))) throw err
    }
  }
}

/**
 * The source's removal as one write of the row store: its rows leave every view, its columns are
 * unlinked, its runs, records and state go, and the DELETE change is recorded. Fails whole when
 * the source has a Subscription state row again (made by a racing update after `removeSubscription`).
 */
async function removeSource(ctx: ServiceContext, before: DataSourceRow) {
  const { id } = before
  const tenant = ctx.scope.tenantId
  // Its rows leave every view they were in (row.left, panel.rows_changed): a write of the row
  // store's protocol whose own statements remove the source.
  const now = isoNow(ctx.clock)
  await writeRows(ctx, {
    source: { id, tenantId: tenant, panelId: before.panelId },
    generation: before.currentGeneration,
    write: rowWrite({
      tenantId: tenant,
      panelId: before.panelId,
      actorId: ctx.scope.userId,
      cause: 'delete',
      eventKey: `delete:${id}`,
      at: now,
      dataSourceId: id,
    }),
    now,
    own: {
      removesSource: true,
      statements: [
        // Columns unlinked are columns changed: the panel's columns version moves with them, as
        // for any column change (its rows are then stale; rowstore/materialise.ts).
        sql`UPDATE panels SET columns_version = columns_version + 1 WHERE id = ${before.panelId} AND tenant_id = ${tenant}
          AND EXISTS (SELECT 1 FROM columns WHERE tenant_id = ${tenant} AND data_source_id = ${id})`,
        ctx.db
          .update(columns)
          .set({ dataSourceId: null, updatedAt: now })
          .where(and(eq(columns.tenantId, tenant), eq(columns.dataSourceId, id))),
        ctx.db.delete(records).where(eq(records.dataSourceId, id)),
        ctx.db.delete(syncRuns).where(eq(syncRuns.dataSourceId, id)),
        ctx.db.delete(webhookEvents).where(eq(webhookEvents.dataSourceId, id)),
        // The guard: fails the batch (json() of a text that is not JSON) while a Subscription exists.
        sql`SELECT json('a Subscription was made meanwhile') FROM fhir_source_subscriptions WHERE data_source_id = ${id}`,
        ctx.db.delete(dataSources).where(and(eq(dataSources.id, id), eq(dataSources.tenantId, tenant))),
        changeInsert(ctx, {
          panelId: before.panelId,
          entityType: 'DataSource',
          entityId: id,
          action: 'DELETE',
          changes: { type: { oldValue: before.type }, config: { oldValue: await maskConfig(ctx.secrets, before.config) } },
        }),
      ],
    },
  })
}

const toSyncResult = async (ctx: ServiceContext, o: SyncOutcome): Promise<SyncResultDto> => ({
  ...(await dto(ctx, o.source)),
  message: o.message,
  status: o.source.syncStatus,
  recordsProcessed: o.recordsProcessed,
})

/**
 * Runs a sync now and answers the source with `message`, `status` and `recordsProcessed`
 * (CONTRACT: POST …/sync); with `background` it answers the opened sync run at once (202).
 * A sync already running is a 409 with that run in `details`.
 */
export async function syncDataSource(
  ctx: ServiceContext,
  id: number,
  options: { background?: boolean } & SourceAddress = {},
): Promise<{ background: false; result: SyncResultDto } | { background: true; run: SyncRunDto }> {
  const source = await requireDataSource(ctx, id, options)
  refusePull(source)
  if (options.background) return { background: true, run: toSyncRunDto(await runSyncInBackground(ctx, source, 'manual')) }
  return { background: false, result: await toSyncResult(ctx, await runSync(ctx, source, 'manual')) }
}

/** Asks the source's running sync to stop at its next batch boundary; answers that run (409 when none runs). */
export async function cancelSync(ctx: ServiceContext, id: number): Promise<SyncRunDto> {
  return toSyncRunDto(await requestCancel(ctx, await requireDataSource(ctx, id)))
}

/** The source's sync runs, newest first. */
export async function listSyncRuns(ctx: ServiceContext, id: number, limit: number) {
  await requireDataSource(ctx, id)
  const where = and(eq(syncRuns.tenantId, ctx.scope.tenantId), eq(syncRuns.dataSourceId, id))
  const [rows, [{ total }]] = await ctx.db.batch([
    ctx.db.select().from(syncRuns).where(where).orderBy(desc(syncRuns.id)).limit(limit),
    ctx.db.select({ total: count() }).from(syncRuns).where(where),
  ])
  return { syncRuns: rows.map(toSyncRunDto), total }
}
