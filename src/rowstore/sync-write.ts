import { eq, type SQL, sql } from 'drizzle-orm'
import { type Connector, type ConnectorContext, ConnectorError, type SourceRecord } from '../connectors/types.ts'
import type { ServiceContext } from '../context.ts'
import { runBatch } from '../db/client.ts'
import { type dataSources, type syncRuns, syncRuns as syncRunsTable } from '../db/schema.ts'
import { isoNow } from '../lib/clock.ts'
import { createGuardedFetch } from '../lib/egress/guarded-fetch.ts'
import { GenerationDigest } from './digest.ts'
import { deleteIdentities, upsertIdentities, writtenRowIdentities } from './identities.ts'
import type { PanelPlan } from './materialise.ts'
import { membershipStatements, type RowWrite, writeToken } from './membership.ts'
import type { PanelMembership } from './membership-plan.ts'
import {
  countRemovedKeys,
  deleteStatements,
  type KeySet,
  keyRecords,
  newKeySet,
  type RowWriter,
  upsertStatements,
} from './records.ts'

/**
 * The row store's side of a sync run (DATA-ENGINE: Sync lifecycle; docs/live.md "The write
 * path"): reading the connector batch by batch and committing each batch with its lease renewal,
 * counters and cursor — and, for an incremental sync (which writes the visible generation), the
 * identities it changes and the views' membership step, so its events commit with it. The
 * lifecycle around it (begin, finish, fail) is src/modules/datasources/datasources.sync*.ts.
 */

type DataSourceRow = typeof dataSources.$inferSelect
type SyncRunRow = typeof syncRuns.$inferSelect

/** How long a lease holds without a sign of life; every committed batch renews it. */
export const LEASE_MS = 2 * 60 * 1000

/** A cancel was requested (seen at a batch boundary). */
export class SyncCancelled extends Error {}
/** The service is stopping (`ctx.stopping`): the run is handed back as after a crash. */
export class SyncInterrupted extends Error {}

export interface Counts {
  rowsRead: number
  rowsWritten: number
  rowsDeleted: number
  truncated: string[]
}

/** The write of a sync run's batches: its membership step's token, actor and cause. */
export function syncWrite(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, at: string): RowWrite {
  return {
    tenantId: source.tenantId,
    panelId: source.panelId,
    actorId: ctx.scope.userId,
    cause: run.trigger === 'webhook' ? 'webhook' : 'sync',
    eventKey: `sync:${run.id}`,
    token: writeToken(),
    at,
    dataSourceId: source.id,
  }
}

/** A full sync's counts from what its generation holds (rows sharing a key are one record: the last read wins). */
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

export interface SyncJob {
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
export async function readAndWrite(ctx: ServiceContext, job: SyncJob): Promise<string | undefined> {
  const { source, run, counts, incremental } = job
  const limits = ctx.config.syncLimits
  const timeout = AbortSignal.timeout(limits.timeoutMs)
  // A stopping service aborts the connector's reads too, so a sync waiting on its source hands back at once.
  const signal = ctx.stopping ? AbortSignal.any([timeout, ctx.stopping]) : timeout
  let pendingCursor: { value: unknown } | undefined
  const cctx: ConnectorContext = {
    signal,
    cache: sourceCache(ctx, source),
    fetch: createGuardedFetch({
      fetch: ctx.outbound.fetch,
      resolveHost: ctx.outbound.resolveHost,
      allowPrivate: ctx.config.allowPrivateNetworkSources,
    }),
    log: ctx.log,
    now: () => ctx.clock.now(),
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
  // A full sync digests the rows it stores, so its end can tell an unchanged generation at once.
  const rows = { plan: job.plan, now: ctx.clock.now(), digest: incremental ? undefined : new GenerationDigest() }
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
    return rows.digest?.toString()
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
    // Rows rewritten in place: the generation no longer matches the digest of its full sync.
    sql`UPDATE data_sources SET generation_digest = NULL WHERE id = ${source.id} AND generation_digest IS NOT NULL`,
  ]
}

/**
 * Commits one batch with the lease renewal and run counters (and, for an incremental sync, its
 * events: the feed's streams are woken); stops when a cancel was requested.
 */
async function commitBatch(ctx: ServiceContext, run: SyncRunRow, statements: SQL[], counts: Counts, emits: boolean) {
  const expires = new Date(ctx.clock.now().getTime() + LEASE_MS).toISOString()
  const results = await runBatch(ctx.db, [
    ...statements.map((s) => ctx.db.run(s)),
    ctx.db.run(
      sql`UPDATE data_sources SET lease_expires_at = ${expires} WHERE id = ${run.dataSourceId} AND lease_run_id = ${run.id}`,
    ),
    ctx.db.run(
      sql`UPDATE sync_runs SET rows_read = ${counts.rowsRead}, rows_written = ${counts.rowsWritten} WHERE id = ${run.id}`,
    ),
    ctx.db.select({ cancel: syncRunsTable.cancelRequested }).from(syncRunsTable).where(eq(syncRunsTable.id, run.id)),
  ])
  const [state] = results[results.length - 1] as { cancel: boolean }[]
  if (emits) ctx.live.committed(run.tenantId)
  if (state?.cancel) throw new SyncCancelled()
}

/** The per-source cache a connector gets (e.g. OAuth2 tokens), under the tenant's key space. */
function sourceCache(ctx: ServiceContext, source: DataSourceRow): ConnectorContext['cache'] {
  const key = (k: string) => `datasource:${source.id}:${k}`
  return {
    get: (k) => ctx.cache.get(source.tenantId, key(k)),
    set: (k, value, ttlSeconds) => ctx.cache.set(source.tenantId, key(k), value, ttlSeconds),
  }
}
