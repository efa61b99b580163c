import { and, eq, lt, sql } from 'drizzle-orm'
import { dataSources, records, syncRuns } from '../../db/schema.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import { nextSyncAt } from './datasources.schedule.ts'
import type { DataSourceRow, SyncRunRow } from './datasources.schemas.ts'

/**
 * The end of a sync run (DATA-ENGINE: Sync lifecycle), in one batch each: success switches the
 * generation (full) and records the SYNC change; failure or cancellation drops a full sync's
 * partial generation, so readers keep the previous one.
 */

export interface SyncOutcome {
  source: DataSourceRow
  run: SyncRunRow
  recordsProcessed: number
  message: string
}

export interface Counts {
  rowsRead: number
  rowsWritten: number
  rowsDeleted: number
  truncated: string[]
}

export interface Ended {
  source: DataSourceRow
  run: SyncRunRow
  counts: Counts
  incremental: boolean
}

/** Success: switch generation (full), end the run, record the SYNC change, notify — one batch. */
export async function finish(
  ctx: ServiceContext,
  { source, run, counts, incremental }: Ended,
  durationMs: number,
  options: { notify?: boolean } = {},
): Promise<SyncOutcome> {
  const now = isoNow(ctx.clock)
  const generation = incremental ? source.currentGeneration : run.generation
  const cut = counts.truncated.length > 0 ? ` (stopped early: ${counts.truncated.join('; ')})` : ''
  const message = `${counts.rowsWritten} records synchronised from ${source.type} source${cut}`
  await ctx.db.batch([
    ctx.db
      .update(dataSources)
      .set({
        currentGeneration: generation,
        syncStatus: 'success',
        lastSyncAt: now,
        nextSyncAt: nextSyncAt(source.config, ctx.clock.now()),
        errorMessage: null,
        leaseRunId: null,
        leaseExpiresAt: null,
      })
      .where(and(eq(dataSources.id, source.id), eq(dataSources.leaseRunId, run.id))),
    ctx.db
      .delete(records)
      .where(
        and(
          eq(records.dataSourceId, source.id),
          lt(records.generation, generation),
          sql`(SELECT current_generation FROM data_sources WHERE id = ${source.id}) = ${generation}`,
        ),
      ),
    ctx.db
      .update(syncRuns)
      .set({
        status: 'success',
        finishedAt: now,
        durationMs,
        rowsRead: counts.rowsRead,
        rowsWritten: counts.rowsWritten,
        rowsDeleted: counts.rowsDeleted,
        truncated: counts.truncated.length > 0,
        error: counts.truncated.length > 0 ? `Stopped early: ${counts.truncated.join('; ')}` : null,
      })
      .where(eq(syncRuns.id, run.id)),
    changeInsert(ctx, {
      panelId: source.panelId,
      entityType: 'DataSource',
      entityId: source.id,
      action: 'SYNC',
      changes: {
        recordsProcessed: { newValue: counts.rowsWritten },
        syncStatus: { oldValue: source.syncStatus, newValue: 'success' },
      },
    }),
    ...(options.notify
      ? [notifyViewOwners(ctx, { panelId: source.panelId, type: 'DATA_CHANGED', impact: 'info', message })]
      : []),
  ] as unknown as Parameters<typeof ctx.db.batch>[0])
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
  await ctx.db.batch([
    ...dropPartial,
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
    ctx.db
      .update(syncRuns)
      .set({
        status,
        error,
        finishedAt: now,
        durationMs,
        rowsRead: counts.rowsRead,
        rowsWritten: incremental ? counts.rowsWritten : 0,
        rowsDeleted: incremental ? counts.rowsDeleted : 0,
      })
      .where(eq(syncRuns.id, run.id)),
    changeInsert(ctx, {
      panelId: source.panelId,
      entityType: 'DataSource',
      entityId: source.id,
      action: 'SYNC',
      changes: { syncStatus: { oldValue: source.syncStatus, newValue: status }, errorMessage: { newValue: error } },
    }),
  ] as unknown as Parameters<typeof ctx.db.batch>[0])
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
