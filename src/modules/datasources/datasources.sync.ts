import { and, eq } from 'drizzle-orm'
import { ConnectorError } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { records, type SyncTrigger, syncRuns } from '../../db/schema.ts'
import { conflict } from '../../errors.ts'
import { FileAccessError } from '../../lib/files.ts'
import { catchUpColumnChanges, type PanelPlan } from '../../rowstore/materialise.ts'
import type { DataSourceRow, SyncRunRow } from './datasources.schemas.ts'
import { SecretUnavailableError } from './datasources.secrets.ts'
import { countGeneration, fail, finish, outcome, type SyncOutcome } from './datasources.sync-end.ts'
import { beginSync, INTERRUPTED, leaseHolder, recoverInterruptedSyncs } from './datasources.sync-lease.ts'
import { type Counts, openRead, readAndWrite, SyncCancelled, SyncInterrupted } from './datasources.sync-read.ts'

/**
 * A sync run from its take to its end (DATA-ENGINE: Sync lifecycle), the one home of the
 * lifecycle: the lease (datasources.sync-lease.ts: take, renewal, release, crash recovery), the
 * read (datasources.sync-read.ts: the connector, its context, the batches through the row store's
 * write protocol, cancellation, time limit) and the end (datasources.sync-end.ts: finish, fail,
 * the outcome). Webhook deliveries (datasources.webhooks.ts) use the same lease, end and counts.
 */

/**
 * Runs an opened sync to its end. A `full` read writes the run's new generation and switches to it
 * at the end in one batch (with the run, the SYNC change and notifications); an `incremental` read
 * upserts/deletes by key in the current generation and advances the cursor with each committed
 * batch. A failure or cancellation of a full read drops the partial generation, so readers keep the
 * previous one. Never throws for a source failure: the outcome carries the error.
 */
export async function executeSync(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow): Promise<SyncOutcome> {
  const started = Date.now()
  const counts: Counts = { rowsRead: 0, rowsWritten: 0, rowsDeleted: 0, truncated: [] }
  let incremental = false
  let plan: PanelPlan | undefined
  let digest: string | undefined
  try {
    const job = await openRead(ctx, source, run, counts)
    incremental = job.incremental
    plan = job.plan
    // Leftovers of a run that crashed while writing this generation.
    if (!incremental)
      await ctx.db.delete(records).where(and(eq(records.dataSourceId, source.id), eq(records.generation, run.generation)))
    digest = await readAndWrite(ctx, job)
    if (!incremental) await countGeneration(ctx.db, source.id, run.generation, counts)
  } catch (err) {
    if (err instanceof SyncInterrupted) return handBack(ctx, source, run, counts)
    const cancelled = err instanceof SyncCancelled
    const message = cancelled ? 'Synchronisation cancelled' : errorMessageOf(ctx, source, run, err)
    return fail(ctx, { source, run, counts, incremental }, cancelled ? 'cancelled' : 'error', message, Date.now() - started)
  }
  const outcome = await finish(ctx, { source, run, counts, incremental, digest }, Date.now() - started)
  if (plan) await catchUpColumnChanges(ctx, source.panelId, plan)
  return outcome
}

/** beginSync + executeSync: the sync a request waits for (create, POST …/sync). */
export async function runSync(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncOutcome> {
  const run = await beginSync(ctx, source, trigger)
  return executeSync(ctx, source, run)
}

/**
 * Opens the run (so a held lease is still a 409 to the caller) and lets the sync go on in the
 * background through `ctx.defer` (kept alive by waitUntil on Workers, finished or handed back at
 * shutdown on Node and Deno); its failures end up on the source and the run, anything unexpected
 * in the log.
 */
export async function runSyncInBackground(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncRunRow> {
  const run = await beginSync(ctx, source, trigger)
  ctx.defer(executeSync(ctx, source, run), { what: 'sync', dataSourceId: source.id, runId: run.id })
  return run
}

/**
 * Asks the running sync of a source to stop (DATA-ENGINE: cancel at the next batch boundary). The
 * runner sees the request when it commits its next batch; a full sync then drops its partial
 * generation. Answers the run; 409 when no sync is running.
 */
export async function requestCancel(ctx: ServiceContext, source: DataSourceRow): Promise<SyncRunRow> {
  const holder = leaseHolder(ctx, source)
  if (holder === undefined) throw conflict(`No synchronisation of data source ${source.id} is running`)
  const [run] = await ctx.db
    .update(syncRuns)
    .set({ cancelRequested: true })
    .where(and(eq(syncRuns.id, holder), eq(syncRuns.status, 'syncing')))
    .returning()
  if (!run) throw conflict(`No synchronisation of data source ${source.id} is running`)
  return run
}

// --- Internal helpers ---

/**
 * A sync stopped by a stopping service ends exactly as the crash path ends it: the run in `error`
 * ("interrupted"), the source due again with its lease released; the partial generation is left
 * for the next run to clear, as after a crash.
 */
async function handBack(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, counts: Counts) {
  await recoverInterruptedSyncs(ctx.db, ctx.clock.now(), { runId: run.id })
  ctx.log.warn('sync handed back', { dataSourceId: source.id, runId: run.id, rowsRead: counts.rowsRead })
  return outcome(ctx, source, run, 0, INTERRUPTED)
}

function errorMessageOf(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, err: unknown): string {
  if (err instanceof ConnectorError || err instanceof SecretUnavailableError || err instanceof FileAccessError) return err.message
  ctx.log.error('sync failed unexpectedly', {
    requestId: ctx.meta.requestId,
    dataSourceId: source.id,
    runId: run.id,
    error: err instanceof Error ? err.message : String(err),
  })
  return `Synchronisation failed because of an internal error (request ${ctx.meta.requestId})`
}
