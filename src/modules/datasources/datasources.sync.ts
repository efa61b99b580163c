import { and, desc, eq, sql } from 'drizzle-orm'
import { connectorFor, notAvailableMessage } from '../../connectors/registry.ts'
import { ConnectorError } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import { dataSources, records, type SyncTrigger, syncRuns } from '../../db/schema.ts'
import { conflict } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { FileAccessError } from '../../lib/files.ts'
import { catchUpColumnChanges, loadPanelPlan, type PanelPlan } from '../../rowstore/materialise.ts'
import { loadPanelMembership } from '../../rowstore/membership-plan.ts'
import {
  type Counts,
  countGeneration,
  LEASE_MS,
  readAndWrite,
  SyncCancelled,
  SyncInterrupted,
} from '../../rowstore/sync-write.ts'
import { type DataSourceRow, type SyncRunRow, toSyncRunDto } from './datasources.schemas.ts'
import { SecretUnavailableError, unsealConfig } from './datasources.secrets.ts'
import { fail, finish, outcome, type SyncOutcome } from './datasources.sync-end.ts'

const INTERRUPTED = 'Synchronisation interrupted: the service stopped while it ran; it will run again'

/**
 * Takes the source's lease and opens a sync run (DATA-ENGINE: Sync lifecycle): the run row and
 * the lease are written in one batch, both only when no live lease exists, so two runners can
 * never both win. A held lease is a 409 carrying the running sync run.
 */
export async function beginSync(
  ctx: ServiceContext,
  source: DataSourceRow,
  trigger: SyncTrigger,
  leaseMs = LEASE_MS,
): Promise<SyncRunRow> {
  const now = isoNow(ctx.clock)
  const expires = new Date(ctx.clock.now().getTime() + leaseMs).toISOString()
  const free = sql`id = ${source.id} AND tenant_id = ${source.tenantId} AND (lease_run_id IS NULL OR lease_expires_at < ${now})`
  const [, leased, [row]] = await ctx.db.batch([
    ctx.db.run(sql`
      INSERT INTO sync_runs (tenant_id, data_source_id, status, "trigger", generation, started_at)
      SELECT tenant_id, id, 'syncing', ${trigger}, current_generation + 1, ${now} FROM data_sources WHERE ${free}`),
    ctx.db.run(sql`
      UPDATE data_sources SET lease_run_id = last_insert_rowid(), lease_expires_at = ${expires}, sync_status = 'syncing'
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
    const connector = connectorFor(source.type)
    if (!connector) throw new ConnectorError(notAvailableMessage(source.type))
    const plain = await unsealConfig(ctx.secrets, source.config)
    const parsed = connector.configSchema.safeParse(plain)
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `config.${i.path.join('.')}: ${i.message}`).join('; ')
      throw new ConnectorError(`Invalid configuration: ${issues}`)
    }
    incremental = connector.mode?.(parsed.data) === 'incremental'
    // Leftovers of a run that crashed while writing this generation.
    if (!incremental)
      await ctx.db.delete(records).where(and(eq(records.dataSourceId, source.id), eq(records.generation, run.generation)))
    plan = await loadPanelPlan(ctx.db, source.tenantId, source.panelId)
    // An incremental sync writes the visible generation: each batch moves the views' membership.
    const membership = incremental ? await loadPanelMembership(ctx.db, source.tenantId, source.panelId) : undefined
    digest = await readAndWrite(ctx, {
      source,
      run,
      connector,
      config: parsed.data,
      plain,
      incremental,
      counts,
      plan,
      membership,
    })
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
  const now = isoNow(ctx.clock)
  if (!source.leaseRunId || !source.leaseExpiresAt || source.leaseExpiresAt < now) {
    throw conflict(`No synchronisation of data source ${source.id} is running`)
  }
  const [run] = await ctx.db
    .update(syncRuns)
    .set({ cancelRequested: true })
    .where(and(eq(syncRuns.id, source.leaseRunId), eq(syncRuns.status, 'syncing')))
    .returning()
  if (!run) throw conflict(`No synchronisation of data source ${source.id} is running`)
  return run
}

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
  const stale =
    typeof which === 'object'
      ? sql`sync_status = 'syncing' AND lease_run_id = ${which.runId}`
      : which
        ? sql`sync_status = 'syncing'`
        : sql`sync_status = 'syncing' AND (lease_expires_at IS NULL OR lease_expires_at < ${at})`
  const [, sources] = await db.batch([
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
