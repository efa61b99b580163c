import { and, desc, eq, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import { dataSources, type SyncTrigger, syncRuns } from '../../db/schema.ts'
import { conflict } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { type DataSourceRow, type SyncRunRow, toSyncRunDto } from './datasources.schemas.ts'

/**
 * A source's lease (DATA-ENGINE: Sync lifecycle): the one place that takes, renews, checks and
 * releases it, and recovers sources whose lease ran out; with the two ways a run holding it is
 * stopped early (a cancel, a stopping service). The lease stops two runners syncing a source at
 * once (two processes, or a request and the scheduler); a pulled sync and a webhook snapshot hold
 * it alike, each for its own duration.
 */

/** How long a pulled sync's lease holds without a sign of life; every committed batch renews it. */
export const LEASE_MS = 2 * 60 * 1000
/** A webhook snapshot (sync.started … sync.completed) holds the source this long without a delivery. */
export const SNAPSHOT_LEASE_MS = 24 * 60 * 60 * 1000

/** A cancel was requested (seen at a batch boundary). */
export class SyncCancelled extends Error {}
/** The service is stopping (`ctx.stopping`): the run is handed back as after a crash. */
export class SyncInterrupted extends Error {}

export const INTERRUPTED = 'Synchronisation interrupted: the service stopped while it ran; it will run again'

/**
 * Takes the source's lease and opens a sync run: the run row and the lease are written in one
 * batch, both only when no live lease exists, so two runners can never both win. A held lease is a
 * 409 carrying the running sync run.
 */
export async function beginSync(
  ctx: ServiceContext,
  source: DataSourceRow,
  trigger: SyncTrigger,
  leaseMs = LEASE_MS,
): Promise<SyncRunRow> {
  const now = isoNow(ctx.clock)
  const free = sql`id = ${source.id} AND tenant_id = ${source.tenantId} AND ${leaseFree(now)}`
  const [, leased, [row]] = await ctx.db.batch([
    ctx.db.run(sql`
      INSERT INTO sync_runs (tenant_id, data_source_id, status, "trigger", generation, started_at)
      SELECT tenant_id, id, 'syncing', ${trigger}, current_generation + 1, ${now} FROM data_sources WHERE ${free}`),
    ctx.db.run(sql`
      UPDATE data_sources SET lease_run_id = last_insert_rowid(), lease_expires_at = ${expiry(ctx, leaseMs)}, sync_status = 'syncing'
      WHERE ${free}`),
    ctx.db.select({ leaseRunId: dataSources.leaseRunId }).from(dataSources).where(eq(dataSources.id, source.id)),
  ])
  const [run] = row?.leaseRunId
    ? await ctx.db.select().from(syncRuns).where(eq(syncRuns.id, row.leaseRunId))
    : await ctx.db.select().from(syncRuns).where(eq(syncRuns.dataSourceId, source.id)).orderBy(desc(syncRuns.id)).limit(1)
  if (rowsAffected(leased) === 1 && run) return run
  throw conflict(`A synchronisation of data source ${source.id} is already running`, run ? toSyncRunDto(run) : null)
}

/**
 * Takes back a suspended run of the source (a resumable read with a checkpoint whose lease ran to
 * its resume time): the lease is renewed for it only if nobody took it meanwhile. Answers the run
 * to read on with, or undefined when the source has none to resume (or its time has not come:
 * its lease still holds, and beginSync answers 409 with it).
 */
export async function resumeSuspended(ctx: ServiceContext, source: DataSourceRow): Promise<SyncRunRow | undefined> {
  const now = isoNow(ctx.clock)
  const [run] = await ctx.db
    .select()
    .from(syncRuns)
    .where(
      and(
        eq(syncRuns.dataSourceId, source.id),
        eq(syncRuns.status, 'syncing'),
        sql`${syncRuns.checkpoint} IS NOT NULL`,
        sql`${syncRuns.id} = (SELECT lease_run_id FROM data_sources WHERE id = ${source.id} AND ${leaseFree(now)})`,
      ),
    )
  if (!run) return undefined
  const taken = await ctx.db.run(sql`
    UPDATE data_sources SET lease_expires_at = ${expiry(ctx, LEASE_MS)}, sync_status = 'syncing'
    WHERE id = ${source.id} AND lease_run_id = ${run.id} AND ${leaseFree(now)}`)
  return rowsAffected(taken) === 1 ? run : undefined
}

/** In SQL, on `data_sources`: the run holding the lease is suspended (a checkpoint: resumed, never recovered). */
export const holdsSuspendedRun = sql`EXISTS (SELECT 1 FROM sync_runs r
  WHERE r.id = data_sources.lease_run_id AND r.status = 'syncing' AND r.checkpoint IS NOT NULL)`

/** The renewal of `run`'s lease for `leaseMs`, for the batch that shows the run is alive. */
export function renewLease(ctx: ServiceContext, run: SyncRunRow, leaseMs: number): SQL {
  return sql`UPDATE data_sources SET lease_expires_at = ${expiry(ctx, leaseMs)}
    WHERE id = ${run.dataSourceId} AND lease_run_id = ${run.id}`
}

/** Whether a live lease holds the source (as read): the id of the run holding it, else undefined. */
export function leaseHolder(ctx: ServiceContext, source: DataSourceRow): number | undefined {
  if (!source.leaseRunId || !source.leaseExpiresAt || source.leaseExpiresAt < isoNow(ctx.clock)) return undefined
  return source.leaseRunId
}

/** In SQL, on `data_sources`: no live lease holds the source at `at` (never taken, released or run out). */
export const leaseFree = (at: string): SQL => sql`(lease_run_id IS NULL OR lease_expires_at < ${at})`

/** In SQL: `run` still holds the source's lease (a run's end applies only then). */
export const stillLeased = (run: SyncRunRow): SQL =>
  sql`EXISTS (SELECT 1 FROM data_sources WHERE id = ${run.dataSourceId} AND lease_run_id = ${run.id})`

/** The source's row while `run` holds its lease: the `where` of a run's end. */
export const heldBy = (run: SyncRunRow) => and(eq(dataSources.id, run.dataSourceId), eq(dataSources.leaseRunId, run.id))

/** The lease released: spread into the source's update at a run's end. */
export const RELEASED = { leaseRunId: null, leaseExpiresAt: null } as const

/**
 * Crash recovery (DATA-ENGINE: Sync lifecycle): sources left in `syncing` whose lease ran out are
 * marked `error` ("interrupted") and due again; their runs end in error. With `all`, every
 * `syncing` source is recovered regardless of its lease (start-up of the only process of a file
 * database); with `{ runId }`, the source that run holds (a sync handing itself back at shutdown).
 * Runs across tenants: a system task, not a request.
 */
export async function recoverInterruptedSyncs(
  db: ServiceContext['db'],
  now: Date,
  which: boolean | { runId: number } = false,
): Promise<number> {
  const at = now.toISOString()
  // A suspended run (a checkpoint) is resumed from it by a later tick, never recovered as crashed.
  const stale =
    typeof which === 'object'
      ? sql`sync_status = 'syncing' AND lease_run_id = ${which.runId} AND NOT ${holdsSuspendedRun}`
      : which
        ? sql`sync_status = 'syncing' AND NOT ${holdsSuspendedRun}`
        : sql`sync_status = 'syncing' AND (lease_expires_at IS NULL OR lease_expires_at < ${at}) AND NOT ${holdsSuspendedRun}`
  const [, , sources] = await db.batch([
    // What the crashed runs staged (datasources.sync-stage.ts) goes with them.
    db.run(sql`
      DELETE FROM sync_staged_records WHERE run_id IN (SELECT id FROM sync_runs
        WHERE status = 'syncing' AND data_source_id IN (SELECT id FROM data_sources WHERE ${stale}))`),
    db.run(sql`
      UPDATE sync_runs SET status = 'error', error = ${INTERRUPTED}, finished_at = ${at}
      WHERE status = 'syncing' AND data_source_id IN (SELECT id FROM data_sources WHERE ${stale})`),
    db.run(sql`
      UPDATE data_sources SET sync_status = 'error', error_message = ${INTERRUPTED}, lease_run_id = NULL,
        lease_expires_at = NULL, next_sync_at = ${at}
      WHERE ${stale}`),
  ])
  return rowsAffected(sources)
}

// --- Internal helpers ---

const expiry = (ctx: ServiceContext, leaseMs: number) => new Date(ctx.clock.now().getTime() + leaseMs).toISOString()
