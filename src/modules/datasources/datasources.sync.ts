import { and, eq, isNotNull } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { type SyncTrigger, syncRuns } from '../../db/schema.ts'
import { conflict } from '../../errors.ts'
import { catchUpColumnChanges } from '../../rowstore/recompute.ts'
import type { DataSourceRow, SyncRunRow } from './datasources.schemas.ts'
import { failed, finish, newCounts, type SyncOutcome } from './datasources.sync-end.ts'
import { beginSync, leaseHolder, resumeSuspended } from './datasources.sync-lease.ts'
import { openRead, type Read, readAndWrite, type SyncJob } from './datasources.sync-read.ts'

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
 * previous one. Never throws for a source failure: the outcome carries the error, and a run that
 * read to its end the plan it made its rows with (its runner's catch-up: `runSync`). `reshape`
 * turns the job into another read of the same source (a FHIR subscription's catch-up: an
 * incremental search since an instant).
 */
export async function executeSync(
  ctx: ServiceContext,
  source: DataSourceRow,
  run: SyncRunRow,
  reshape?: (job: SyncJob) => SyncJob,
): Promise<SyncOutcome> {
  const started = Date.now()
  const counts = newCounts()
  let job: SyncJob | undefined
  let read: Read
  try {
    job = await openRead(ctx, source, run, counts)
    if (reshape) job = reshape(job)
    read = await readAndWrite(ctx, job)
  } catch (err) {
    return failed(ctx, { source, run, counts, incremental: job?.incremental ?? false }, err, Date.now() - started)
  }
  const ended = { source, run, counts, incremental: job.incremental, digest: read.digest, cursor: read.cursor }
  return { ...(await finish(ctx, ended, Date.now() - started)), plan: read.plan }
}

/**
 * The run a sync call or a tick goes on with: the source's suspended run when its time has come (a
 * bulk export resumes polling or downloading, never kicks off anew), else a new one (beginSync).
 */
export async function takeSync(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncRunRow> {
  return (await resumeSuspended(ctx, source)) ?? (await beginSync(ctx, source, trigger))
}

/**
 * takeSync + executeSync + the panel's follow-up: the sync a request or the scheduler waits for
 * (create, POST …/sync, a due source).
 */
export async function runSync(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncOutcome> {
  const run = await takeSync(ctx, source, trigger)
  return syncAndCatchUp(ctx, source, run)
}

/**
 * Opens the run (so a held lease is still a 409 to the caller) and lets the sync go on in the
 * background through `ctx.defer` (kept alive by waitUntil on Workers, finished or handed back at
 * shutdown on Node and Deno); its failures end up on the source and the run, anything unexpected
 * in the log.
 */
export async function runSyncInBackground(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncRunRow> {
  const run = await takeSync(ctx, source, trigger)
  ctx.defer(syncAndCatchUp(ctx, source, run), { what: 'sync', dataSourceId: source.id, runId: run.id })
  return run
}

/**
 * Asks the running sync of a source to stop (DATA-ENGINE: cancel at the next batch boundary). The
 * runner sees the request when it commits its next batch; a full sync then drops its partial
 * generation. Answers the run; 409 when no sync is running.
 */
export async function requestCancel(ctx: ServiceContext, source: DataSourceRow): Promise<SyncRunRow> {
  // A suspended run waiting for its tick (its lease ran to its resume time) holds the source too:
  // a cancel ends it when it resumes. A lapsed lease without a checkpoint is a crashed run: none.
  const live = leaseHolder(ctx, source)
  const holder = live ?? source.leaseRunId ?? undefined
  if (holder === undefined) throw conflict(`No synchronisation of data source ${source.id} is running`)
  const [run] = await ctx.db
    .update(syncRuns)
    .set({ cancelRequested: true })
    .where(
      and(
        eq(syncRuns.id, holder),
        eq(syncRuns.status, 'syncing'),
        live === undefined ? isNotNull(syncRuns.checkpoint) : undefined,
      ),
    )
    .returning()
  if (!run) throw conflict(`No synchronisation of data source ${source.id} is running`)
  return run
}

// --- Internal helpers ---

/**
 * A run, then the panel's follow-up: columns changed while the run wrote rows with the older plan
 * (recomputed meanwhile from the rows as they were) bring those rows up to date. The row store's
 * recompute is the panel's, not the run's: it comes after the run ended and released its source.
 */
async function syncAndCatchUp(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow): Promise<SyncOutcome> {
  const outcome = await executeSync(ctx, source, run)
  if (outcome.plan) await catchUpColumnChanges(ctx, source.panelId, outcome.plan)
  return outcome
}
