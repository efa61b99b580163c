import { and, eq, lt, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { runBatch } from '../../db/client.ts'
import { dataSources, records, syncRuns } from '../../db/schema.ts'
import { isoNow } from '../../lib/clock.ts'
import { appendEvents } from '../../rowstore/events.ts'
import { generationSwitchIdentities } from '../../rowstore/identities.ts'
import { membershipStatements } from '../../rowstore/membership.ts'
import { loadPanelMembership } from '../../rowstore/membership-plan.ts'
import { type Counts, syncWrite } from '../../rowstore/sync-write.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import { nextSyncAt } from './datasources.schedule.ts'
import { type DataSourceRow, type SyncRunRow, toSyncRunDto } from './datasources.schemas.ts'

/**
 * The end of a sync run (DATA-ENGINE: Sync lifecycle), in one batch each: success switches the
 * generation (full) with its membership step (the views' `row.*` events, `panel.rows_changed`,
 * the view owners' notices), records the SYNC change and appends `sync.completed`; failure or
 * cancellation drops a full sync's partial generation, so readers keep the previous one, and
 * appends `sync.failed` — no row moved, no row event (LIVE.md).
 */

export interface SyncOutcome {
  source: DataSourceRow
  run: SyncRunRow
  recordsProcessed: number
  message: string
}

export interface Ended {
  source: DataSourceRow
  run: SyncRunRow
  counts: Counts
  incremental: boolean
  /** A full sync's digest of the rows it wrote (src/rowstore/digest.ts). */
  digest?: string
}

/** Success: switch generation (full) with its membership step, end the run, record the SYNC change, notify — one batch. */
export async function finish(
  ctx: ServiceContext,
  { source, run, counts, incremental, digest }: Ended,
  durationMs: number,
  options: { notify?: boolean } = {},
): Promise<SyncOutcome> {
  const now = isoNow(ctx.clock)
  const generation = incremental ? source.currentGeneration : run.generation
  const cut = counts.truncated.length > 0 ? ` (stopped early: ${counts.truncated.join('; ')})` : ''
  const message = `${counts.rowsWritten} records synchronised from ${source.type} source${cut}`
  const ended: Partial<SyncRunRow> = {
    status: 'success',
    finishedAt: now,
    durationMs,
    rowsRead: counts.rowsRead,
    rowsWritten: counts.rowsWritten,
    rowsDeleted: counts.rowsDeleted,
    truncated: counts.truncated.length > 0,
    error: counts.truncated.length > 0 ? `Stopped early: ${counts.truncated.join('; ')}` : null,
  }
  // The lifecycle's own statements: the source switched and released, the SYNC change, the notice.
  const switched = ctx.db
    .update(dataSources)
    .set({
      currentGeneration: generation,
      syncStatus: 'success',
      lastSyncAt: now,
      nextSyncAt: nextSyncAt(source.config, ctx.clock.now()),
      errorMessage: null,
      leaseRunId: null,
      leaseExpiresAt: null,
      generationDigest: incremental ? null : (digest ?? null),
    })
    .where(and(eq(dataSources.id, source.id), eq(dataSources.leaseRunId, run.id)))
  const change = changeInsert(ctx, {
    panelId: source.panelId,
    entityType: 'DataSource',
    entityId: source.id,
    action: 'SYNC',
    changes: {
      recordsProcessed: { newValue: counts.rowsWritten },
      syncStatus: { oldValue: source.syncStatus, newValue: 'success' },
    },
  })
  const notice = options.notify
    ? [notifyViewOwners(ctx, { panelId: source.panelId, type: 'DATA_CHANGED', impact: 'info', message })]
    : []
  // The row store's: identities, membership and events of the switch, in the same batch.
  const leased = sql`EXISTS (SELECT 1 FROM data_sources WHERE id = ${source.id} AND lease_run_id = ${run.id})`
  const write = syncWrite(ctx, source, run, now)
  const membership = incremental
    ? undefined
    : membershipStatements(await loadPanelMembership(ctx.db, source.tenantId, source.panelId), write)
  // Rows with the digest of the visible generation's are those rows: nothing to compare.
  const unchanged = digest !== undefined && source.generationDigest === digest
  const identities =
    incremental || unchanged ? [] : generationSwitchIdentities(write, source.id, source.currentGeneration, run.generation, leased)
  await runBatch(ctx.db, [
    ...[...(membership?.before ?? []), ...identities].map((q) => ctx.db.run(q)),
    switched,
    ...(membership?.after ?? []).map((q) => ctx.db.run(q)),
    ctx.db
      .delete(records)
      .where(
        and(
          eq(records.dataSourceId, source.id),
          lt(records.generation, generation),
          sql`(SELECT current_generation FROM data_sources WHERE id = ${source.id}) = ${generation}`,
        ),
      ),
    ...appendEvents(
      source.tenantId,
      [{ type: 'sync.completed', panelId: source.panelId, dataSourceId: source.id, data: toSyncRunDto({ ...run, ...ended }) }],
      now,
      sql`EXISTS (SELECT 1 FROM sync_runs WHERE id = ${run.id} AND status = 'syncing')`,
    ).map((q) => ctx.db.run(q)),
    ctx.db.update(syncRuns).set(ended).where(eq(syncRuns.id, run.id)),
    change,
    ...notice,
  ])
  ctx.live.committed(source.tenantId)
  return outcome(ctx, source, run, counts.rowsWritten, message)
}

/** Failure or cancellation: the partial generation goes, the previous one stays visible. */
export async function fail(
  ctx: ServiceContext,
  { source, run, counts, incremental }: Ended,
  status: 'error' | 'cancelled',
  error: string,
  durationMs: number,
): Promise<SyncOutcome> {
  const now = isoNow(ctx.clock)
  const dropPartial = incremental
    ? []
    : [ctx.db.delete(records).where(and(eq(records.dataSourceId, source.id), eq(records.generation, run.generation)))]
  const ended: Partial<SyncRunRow> = {
    status,
    error,
    finishedAt: now,
    durationMs,
    rowsRead: counts.rowsRead,
    rowsWritten: incremental ? counts.rowsWritten : 0,
    rowsDeleted: incremental ? counts.rowsDeleted : 0,
  }
  await runBatch(ctx.db, [
    ...dropPartial,
    ...appendEvents(
      source.tenantId,
      [{ type: 'sync.failed', panelId: source.panelId, dataSourceId: source.id, data: toSyncRunDto({ ...run, ...ended }) }],
      now,
      sql`EXISTS (SELECT 1 FROM sync_runs WHERE id = ${run.id} AND status = 'syncing')`,
    ).map((q) => ctx.db.run(q)),
    ctx.db
      .update(dataSources)
      .set({
        syncStatus: status,
        errorMessage: status === 'error' ? error : null,
        nextSyncAt: nextSyncAt(source.config, ctx.clock.now()),
        leaseRunId: null,
        leaseExpiresAt: null,
      })
      .where(and(eq(dataSources.id, source.id), eq(dataSources.leaseRunId, run.id))),
    ctx.db.update(syncRuns).set(ended).where(eq(syncRuns.id, run.id)),
    changeInsert(ctx, {
      panelId: source.panelId,
      entityType: 'DataSource',
      entityId: source.id,
      action: 'SYNC',
      changes: { syncStatus: { oldValue: source.syncStatus, newValue: status }, errorMessage: { newValue: error } },
    }),
  ])
  ctx.live.committed(source.tenantId)
  return outcome(ctx, source, run, 0, status === 'cancelled' ? error : `Synchronisation failed: ${error}`)
}

/** The outcome of an ended run, with the source and run as stored now. */
export async function outcome(
  ctx: ServiceContext,
  source: DataSourceRow,
  run: SyncRunRow,
  recordsProcessed: number,
  message: string,
) {
  const [[fresh], [finished]] = await ctx.db.batch([
    ctx.db.select().from(dataSources).where(eq(dataSources.id, source.id)),
    ctx.db.select().from(syncRuns).where(eq(syncRuns.id, run.id)),
  ])
  return { source: fresh ?? source, run: finished ?? run, recordsProcessed, message }
}
