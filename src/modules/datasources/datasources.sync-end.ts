import { eq, sql } from 'drizzle-orm'
import { ConnectorError, ReadSuspended } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { dataSources, syncRuns } from '../../db/schema.ts'
import { isoNow } from '../../lib/clock.ts'
import { FileAccessError } from '../../lib/files.ts'
import { appendEvents } from '../../rowstore/events.ts'
import type { PanelPlan } from '../../rowstore/materialise.ts'
import { countRemovedKeys, dropGeneration } from '../../rowstore/records.ts'
import { commitEvents, type RowWrite, rowWrite, switchGeneration } from '../../rowstore/write.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import { nextSyncAt } from './datasources.schedule.ts'
import { type DataSourceRow, type SyncRunRow, toSyncRunDto } from './datasources.schemas.ts'
import { SecretUnavailableError } from './datasources.secrets.ts'
import {
  heldBy,
  holdsSuspendedRun,
  INTERRUPTED,
  RELEASED,
  recoverInterruptedSyncs,
  SyncCancelled,
  SyncInterrupted,
  stillLeased,
} from './datasources.sync-lease.ts'
import { dropStaged } from './datasources.sync-stage.ts'

/**
 * The end of a sync run (DATA-ENGINE: Sync lifecycle), in one batch each: success switches the
 * generation (full) with its membership step (the views' `row.*` events, `panel.rows_changed`,
 * the view owners' notices), records the SYNC change and appends `sync.completed`; failure or
 * cancellation drops a full sync's partial generation, so readers keep the previous one, and
 * appends `sync.failed` — no row moved, no row event (LIVE.md). A run stopped by a stopping
 * service is handed back as after a crash. Webhook deliveries end their runs here too. Each end
 * commits through the row store's write protocol (`switchGeneration`, `commitEvents`) and reads
 * the source and the run as they ended in the same batch, for the outcome.
 */

/** What a run read and wrote, as its sync run reports it. */
export interface Counts {
  rowsRead: number
  rowsWritten: number
  rowsDeleted: number
  truncated: string[]
}

export const newCounts = (): Counts => ({ rowsRead: 0, rowsWritten: 0, rowsDeleted: 0, truncated: [] })

export interface SyncOutcome {
  source: DataSourceRow
  run: SyncRunRow
  recordsProcessed: number
  message: string
  /** The plan a pulled run that read to its end made its rows with (the runner's catch-up compares it). */
  plan?: PanelPlan
}

export interface Ended {
  source: DataSourceRow
  run: SyncRunRow
  counts: Counts
  incremental: boolean
  /** A full sync's digest of the rows it wrote (src/rowstore/digest.ts). */
  digest?: string
  /** The cursor a full read reached: stored with its switch (an incremental read stores it with each batch). */
  cursor?: { value: unknown }
}

/** Success: switch generation (full) with its membership step, end the run, record the SYNC change, notify — one batch. */
export async function finish(
  ctx: ServiceContext,
  { source, run, counts, incremental, digest, cursor }: Ended,
  durationMs: number,
  options: { notify?: boolean } = {},
): Promise<SyncOutcome> {
  const now = isoNow(ctx.clock)
  const cut = counts.truncated.length > 0 ? ` (stopped early: ${counts.truncated.join('; ')})` : ''
  const message = `${counts.rowsWritten} ${counts.rowsWritten === 1 ? 'record' : 'records'} synchronised from ${source.type} source${cut}`
  const ended: Partial<SyncRunRow> = {
    status: 'success',
    finishedAt: now,
    durationMs,
    rowsRead: counts.rowsRead,
    rowsWritten: counts.rowsWritten,
    rowsDeleted: counts.rowsDeleted,
    truncated: counts.truncated.length > 0,
    error: counts.truncated.length > 0 ? `Stopped early: ${counts.truncated.join('; ')}` : null,
    checkpoint: null,
  }
  // The lifecycle's own statements: the source released, the run ended, the SYNC change, the
  // notice, and `sync.completed`. A full sync's switch is the row store's (rowstore/write.ts), before them.
  const released = ctx.db
    .update(dataSources)
    .set({
      syncStatus: 'success',
      lastSyncAt: now,
      nextSyncAt: nextSyncAt(source.config, ctx.clock.now()),
      errorMessage: null,
      ...RELEASED,
      ...(incremental ? { generationDigest: null } : {}),
    })
    .where(heldBy(run))
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
  const write = incremental ? undefined : syncWrite(ctx, source, run, now)
  // Before `released`, which ends the lease this statement is conditioned on.
  const storedCursor = cursor
    ? [
        ctx.db
          .update(dataSources)
          .set({ config: sql`json_set(config, '$.lastSyncValue', json(${JSON.stringify(cursor.value ?? null)}))` })
          .where(heldBy(run)),
      ]
    : []
  const lifecycle = [
    ...storedCursor,
    dropStaged(ctx, run.id),
    released,
    ...runEvent(source, run, 'sync.completed', ended, now),
    ctx.db.update(syncRuns).set(ended).where(eq(syncRuns.id, run.id)),
    change,
    ...notice,
    ...readBack(ctx, run),
  ]
  // An incremental run's rows and events committed with its batches: its end is the lifecycle's.
  const results = write
    ? await switchGeneration(ctx, { source, to: run.generation, write, digest, when: stillLeased(run), with: lifecycle })
    : await commitEvents(ctx, source.tenantId, lifecycle)
  const stored = storedOf(results)
  return { source: stored.source ?? source, run: stored.run ?? run, recordsProcessed: counts.rowsWritten, message }
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
  const dropPartial = incremental ? [] : dropGeneration(source.id, run.generation)
  const ended: Partial<SyncRunRow> = {
    status,
    error,
    finishedAt: now,
    durationMs,
    rowsRead: counts.rowsRead,
    rowsWritten: incremental ? counts.rowsWritten : 0,
    rowsDeleted: incremental ? counts.rowsDeleted : 0,
    checkpoint: null,
  }
  const change = changeInsert(ctx, {
    panelId: source.panelId,
    entityType: 'DataSource',
    entityId: source.id,
    action: 'SYNC',
    changes: { syncStatus: { oldValue: source.syncStatus, newValue: status }, errorMessage: { newValue: error } },
  })
  const released = ctx.db
    .update(dataSources)
    .set({
      syncStatus: status,
      errorMessage: status === 'error' ? error : null,
      nextSyncAt: nextSyncAt(source.config, ctx.clock.now()),
      ...RELEASED,
    })
    .where(heldBy(run))
  const results = await commitEvents(ctx, source.tenantId, [
    ...dropPartial,
    dropStaged(ctx, run.id),
    ...runEvent(source, run, 'sync.failed', ended, now),
    released,
    ctx.db.update(syncRuns).set(ended).where(eq(syncRuns.id, run.id)),
    change,
    ...readBack(ctx, run),
  ])
  const stored = storedOf(results)
  const message = status === 'cancelled' ? error : `Synchronisation failed: ${error}`
  return { source: stored.source ?? source, run: stored.run ?? run, recordsProcessed: 0, message }
}

/**
 * A run that did not finish: handed back when the service is stopping (as after a crash: the run
 * in error "interrupted", the source due again, the partial generation left for the next run to
 * clear), else cancelled or failed with a message safe to show.
 */
export async function failed(ctx: ServiceContext, run: Ended, err: unknown, durationMs: number): Promise<SyncOutcome> {
  if (err instanceof ReadSuspended) return suspend(ctx, run, err.resumeAt)
  if (err instanceof SyncInterrupted) {
    await recoverInterruptedSyncs(ctx.db, ctx.clock.now(), { runId: run.run.id })
    // A suspended run (its checkpoint) is not recovered: the next tick resumes it from there.
    await ctx.db.run(sql`UPDATE data_sources SET lease_expires_at = ${isoNow(ctx.clock)}
      WHERE id = ${run.source.id} AND lease_run_id = ${run.run.id} AND ${holdsSuspendedRun}`)
    ctx.log.warn('sync handed back', { dataSourceId: run.source.id, runId: run.run.id, rowsRead: run.counts.rowsRead })
    const stored = storedOf(await ctx.db.batch(readBack(ctx, run.run)))
    return { source: stored.source ?? run.source, run: stored.run ?? run.run, recordsProcessed: 0, message: INTERRUPTED }
  }
  if (err instanceof SyncCancelled) return fail(ctx, run, 'cancelled', 'Synchronisation cancelled', durationMs)
  return fail(ctx, run, 'error', errorMessageOf(ctx, run, err), durationMs)
}

/**
 * A resumable read handed the rest of its run to a later invocation (docs/connectors-fhir.md
 * "Exports across invocations"): the run stays `syncing` with its checkpoint and its counts so
 * far, and keeps the source's lease until `resumeAt`; then the scheduler's tick (or a sync call)
 * takes it again (`resumeSuspended`). Its rows so far stay in its generation, unseen until its end.
 */
export async function suspend(ctx: ServiceContext, { source, run, counts }: Ended, resumeAt: Date): Promise<SyncOutcome> {
  const results = await ctx.db.batch([
    ctx.db
      .update(syncRuns)
      .set({ rowsRead: counts.rowsRead, rowsWritten: counts.rowsWritten, rowsDeleted: counts.rowsDeleted })
      .where(eq(syncRuns.id, run.id)),
    ctx.db.update(dataSources).set({ leaseExpiresAt: resumeAt.toISOString() }).where(heldBy(run)),
    ...readBack(ctx, run),
  ])
  const stored = storedOf(results)
  const message = `The export is still in progress; the synchronisation resumes at ${resumeAt.toISOString()}`
  ctx.log.info('sync suspended', { dataSourceId: source.id, runId: run.id, resumeAt: resumeAt.toISOString() })
  return { source: stored.source ?? source, run: stored.run ?? run, recordsProcessed: counts.rowsWritten, message }
}

/** The write of a sync run's rows (its batches, or its switch): actor and cause of the membership step. */
export function syncWrite(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, at: string): RowWrite {
  return rowWrite({
    tenantId: source.tenantId,
    panelId: source.panelId,
    actorId: ctx.scope.userId,
    cause: run.trigger === 'webhook' ? 'webhook' : 'sync',
    eventKey: `sync:${run.id}`,
    at,
    dataSourceId: source.id,
  })
}

/**
 * A full sync's (or a webhook snapshot's) counts from what its generation holds (rows sharing a
 * key are one record: the last read wins): written = its records, deleted = the keys it lacks.
 */
export async function countGeneration(db: ServiceContext['db'], sourceId: number, generation: number, counts: Counts) {
  const [[removed], [written]] = await db.batch([
    db.all<{ n: number }>(countRemovedKeys(sourceId, generation)),
    db.all<{ n: number }>(
      sql`SELECT count(*) AS n FROM records WHERE data_source_id = ${sourceId} AND generation = ${generation}`,
    ),
  ])
  counts.rowsDeleted = Number(removed?.n ?? 0)
  counts.rowsWritten = Number(written?.n ?? 0)
}

// --- Internal helpers ---

/**
 * The source and the run as stored once the run ended, read at the end of the run's end batch (its
 * last two statements), for the outcome.
 */
const readBack = (ctx: ServiceContext, run: SyncRunRow) =>
  [
    ctx.db.select().from(dataSources).where(eq(dataSources.id, run.dataSourceId)),
    ctx.db.select().from(syncRuns).where(eq(syncRuns.id, run.id)),
  ] as const

/** The rows `readBack` read, from the results of the batch it ends. */
function storedOf(results: readonly unknown[]): { source?: DataSourceRow; run?: SyncRunRow } {
  const [sources, runs] = results.slice(-2) as [DataSourceRow[], SyncRunRow[]]
  return { source: sources[0], run: runs[0] }
}

/** `sync.completed` or `sync.failed` with the run as it ends, appended only while the run is still open. */
const runEvent = (
  source: DataSourceRow,
  run: SyncRunRow,
  type: 'sync.completed' | 'sync.failed',
  ended: Partial<SyncRunRow>,
  now: string,
) =>
  appendEvents(
    source.tenantId,
    [{ type, panelId: source.panelId, dataSourceId: source.id, data: toSyncRunDto({ ...run, ...ended }) }],
    now,
    sql`EXISTS (SELECT 1 FROM sync_runs WHERE id = ${run.id} AND status = 'syncing')`,
  )

function errorMessageOf(ctx: ServiceContext, { source, run }: Ended, err: unknown): string {
  if (err instanceof ConnectorError || err instanceof SecretUnavailableError || err instanceof FileAccessError) return err.message
  ctx.log.error('sync failed unexpectedly', {
    requestId: ctx.meta.requestId,
    dataSourceId: source.id,
    runId: run.id,
    error: err instanceof Error ? err.message : String(err),
  })
  return `Synchronisation failed because of an internal error (request ${ctx.meta.requestId})`
}
