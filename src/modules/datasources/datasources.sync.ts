import { and, desc, eq, type SQL, sql } from 'drizzle-orm'
import { connectorFor, notAvailableMessage } from '../../connectors/registry.ts'
import { createGuardedFetch } from '../../connectors/shared/guarded-fetch.ts'
import { type Connector, type ConnectorContext, ConnectorError, type SourceRecord } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import { dataSources, records, type SyncTrigger, syncRuns } from '../../db/schema.ts'
import { conflict } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { FileAccessError } from '../../lib/files.ts'
import { deleteIdentities, upsertIdentities, writtenRowIdentities } from '../../rowstore/identities.ts'
import { loadPanelPlan, type PanelPlan, recomputeAfterColumnChange } from '../../rowstore/materialise.ts'
import { loadPanelMembership, membershipStatements, type PanelMembership } from '../../rowstore/membership.ts'
import {
  countRemovedKeys,
  deleteStatements,
  type KeySet,
  keyRecords,
  newKeySet,
  type RowWriter,
  upsertStatements,
} from '../../rowstore/records.ts'
import { type DataSourceRow, type SyncRunRow, toSyncRunDto } from './datasources.schemas.ts'
import { SecretUnavailableError, unsealConfig } from './datasources.secrets.ts'
import { type Counts, fail, finish, outcome, type SyncOutcome, syncWrite } from './datasources.sync-end.ts'

/** How long a lease holds without a sign of life; every committed batch renews it. */
export const LEASE_MS = 2 * 60 * 1000

class SyncCancelled extends Error {}
/** The service is stopping (`ctx.stopping`): the run is handed back as after a crash. */
class SyncInterrupted extends Error {}

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
    await readAndWrite(ctx, { source, run, connector, config: parsed.data, plain, incremental, counts, plan, membership })
    if (!incremental) {
      // Rows sharing a key are one record (the last read wins): count what the generation holds.
      const [[removed], [written]] = await ctx.db.batch([
        ctx.db.all<{ n: number }>(countRemovedKeys(source.id, run.generation)),
        ctx.db.all<{ n: number }>(
          sql`SELECT count(*) AS n FROM records WHERE data_source_id = ${source.id} AND generation = ${run.generation}`,
        ),
      ])
      counts.rowsDeleted = Number(removed?.n ?? 0)
      counts.rowsWritten = Number(written?.n ?? 0)
    }
  } catch (err) {
    if (err instanceof SyncInterrupted) return handBack(ctx, source, run, counts)
    const cancelled = err instanceof SyncCancelled
    const message = cancelled ? 'Synchronisation cancelled' : errorMessageOf(ctx, source, run, err)
    return fail(ctx, { source, run, counts, incremental }, cancelled ? 'cancelled' : 'error', message, Date.now() - started)
  }
  const outcome = await finish(ctx, { source, run, counts, incremental }, Date.now() - started)
  await catchUpColumnChanges(ctx, source, plan)
  return outcome
}

/** Columns changed while the sync wrote rows with the older plan: bring those rows up to date. */
async function catchUpColumnChanges(ctx: ServiceContext, source: DataSourceRow, plan: PanelPlan | undefined) {
  if (!plan) return
  const [panel] = await ctx.db.all<{ v: number }>(sql`SELECT columns_version AS v FROM panels WHERE id = ${source.panelId}`)
  if (panel && Number(panel.v) !== plan.version) await recomputeAfterColumnChange(ctx, source.panelId)
}

/** beginSync + executeSync: the sync a request waits for (create, POST …/sync). */
export async function runSync(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncOutcome> {
  return executeSync(ctx, source, await beginSync(ctx, source, trigger))
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

interface SyncJob {
  source: DataSourceRow
  run: SyncRunRow
  connector: Connector
  config: unknown
  plain: Record<string, unknown>
  incremental: boolean
  counts: Counts
  plan: PanelPlan
  /** The panel's views, for an incremental sync's membership step per batch. */
  membership?: PanelMembership
}

/** Reads the connector batch by batch; each batch commits with lease renewal, counters and cursor. */
async function readAndWrite(ctx: ServiceContext, job: SyncJob) {
  const { source, run, counts, incremental } = job
  const limits = ctx.config.syncLimits
  const timeout = AbortSignal.timeout(limits.timeoutMs)
  // A stopping service aborts the connector's reads too, so a sync waiting on its source hands back at once.
  const signal = ctx.stopping ? AbortSignal.any([timeout, ctx.stopping]) : timeout
  let pendingCursor: { value: unknown } | undefined
  const cctx: ConnectorContext = {
    signal,
    fetch: createGuardedFetch({
      fetch: ctx.outbound.fetch,
      resolveHost: ctx.outbound.resolveHost,
      allowPrivate: ctx.config.allowPrivateNetworkSources,
    }),
    log: ctx.log,
    now: () => ctx.clock.now(),
    cache: sourceCache(ctx, source),
    files: ctx.files,
    runtime: ctx.runtime,
    allowPrivateNetwork: ctx.config.allowPrivateNetworkSources,
    resolveHost: ctx.outbound.resolveHost,
    openSqlite: ctx.openSqlite,
    limits: { maxBytes: limits.maxBytes, maxRecords: limits.maxRecords },
    cursor: job.plain.lastSyncValue,
    advanceCursor: (value) => {
      pendingCursor = { value }
    },
    truncated: (message) => {
      counts.truncated.push(message)
    },
  }
  const keyField = typeof job.plain.keyField === 'string' && job.plain.keyField !== '' ? job.plain.keyField : undefined
  const seen: KeySet = newKeySet()
  const rows = { plan: job.plan, now: ctx.clock.now() }
  try {
    for await (const batch of job.connector.read(job.config, cctx)) {
      counts.rowsRead += batch.length
      if (counts.rowsRead > limits.maxRecords) {
        throw new ConnectorError(
          `The source has more than ${limits.maxRecords} records, the service's limit for one synchronisation`,
        )
      }
      const cursor = pendingCursor
      pendingCursor = undefined
      const statements = incremental
        ? await incrementalStatements(ctx, job, batch, keyField, rows)
        : await upsertStatements(
            source,
            run.generation,
            await keyRecords(batch, keyField, seen, ctx.sha256Hex),
            isoNow(ctx.clock),
            rows,
          )
      if (!incremental) counts.rowsWritten += batch.length
      if (cursor) {
        statements.push(sql`UPDATE data_sources SET config = json_set(config, '$.lastSyncValue', json(${JSON.stringify(cursor.value ?? null)}))
          WHERE id = ${source.id}`)
      }
      await commitBatch(ctx, run, statements, counts, incremental)
      if (ctx.stopping?.aborted) throw new SyncInterrupted()
    }
  } catch (err) {
    if (ctx.stopping?.aborted && !(err instanceof SyncCancelled)) throw new SyncInterrupted()
    if (timeout.aborted && !(err instanceof SyncCancelled)) {
      throw new ConnectorError(
        `Synchronisation timed out after ${Math.round(limits.timeoutMs / 1000)} s (the service's limit, SYNC_TIMEOUT_SECONDS)`,
        {
          cause: err,
        },
      )
    }
    throw err
  }
}

/**
 * One batch of an incremental sync: upserts and deletes by key in the visible generation, with the
 * identities they change before them and the membership step after them (same batch).
 */
async function incrementalStatements(
  ctx: ServiceContext,
  job: SyncJob,
  batch: SourceRecord[],
  keyField: string | undefined,
  rows: RowWriter,
) {
  const { source, counts } = job
  const upserts = await keyRecords(
    batch.filter((r) => !r.deleted),
    keyField,
    newKeySet(),
    ctx.sha256Hex,
  )
  const deleted = await keyRecords(
    batch.filter((r) => r.deleted),
    keyField,
    newKeySet(),
    ctx.sha256Hex,
  )
  counts.rowsWritten += upserts.length
  counts.rowsDeleted += deleted.length
  const now = isoNow(ctx.clock)
  const write = { ...syncWrite(ctx, source, job.run, now), eventKey: `sync:${job.run.id}:${counts.rowsRead}` }
  const generation = source.currentGeneration
  const deletedKeys = deleted.map((r) => r.key)
  const membership = job.membership ? membershipStatements(job.membership, write) : { before: [], after: [] }
  return [
    ...membership.before,
    ...upsertIdentities(
      write,
      source.id,
      generation,
      upserts.map((r) => r.key),
    ),
    ...deleteIdentities(write, source.id, generation, deletedKeys),
    ...(await upsertStatements(source, generation, upserts, now, rows)),
    ...deleteStatements(source, generation, deletedKeys),
    ...writtenRowIdentities(
      write,
      source.id,
      generation,
      upserts.map((r) => r.key),
    ),
    ...membership.after,
  ]
}

/**
 * Commits one batch with the lease renewal and run counters (and, for an incremental sync, its
 * events: the feed's streams are woken); stops when a cancel was requested.
 */
async function commitBatch(ctx: ServiceContext, run: SyncRunRow, statements: SQL[], counts: Counts, emits: boolean) {
  const expires = new Date(ctx.clock.now().getTime() + LEASE_MS).toISOString()
  const results = await ctx.db.batch([
    ...statements.map((s) => ctx.db.run(s)),
    ctx.db.run(
      sql`UPDATE data_sources SET lease_expires_at = ${expires} WHERE id = ${run.dataSourceId} AND lease_run_id = ${run.id}`,
    ),
    ctx.db.run(
      sql`UPDATE sync_runs SET rows_read = ${counts.rowsRead}, rows_written = ${counts.rowsWritten} WHERE id = ${run.id}`,
    ),
    ctx.db.select({ cancel: syncRuns.cancelRequested }).from(syncRuns).where(eq(syncRuns.id, run.id)),
  ] as unknown as Parameters<typeof ctx.db.batch>[0])
  const [state] = results[results.length - 1] as { cancel: boolean }[]
  if (emits) ctx.live.committed(run.tenantId)
  if (state?.cancel) throw new SyncCancelled()
}

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

/** The per-source cache a connector gets (e.g. OAuth2 tokens), under the tenant's key space. */
function sourceCache(ctx: ServiceContext, source: DataSourceRow): ConnectorContext['cache'] {
  const key = (k: string) => `datasource:${source.id}:${k}`
  return {
    get: (k) => ctx.cache.get(source.tenantId, key(k)),
    set: (k, value, ttlSeconds) => ctx.cache.set(source.tenantId, key(k), value, ttlSeconds),
  }
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
