import { and, desc, eq, lt, sql } from 'drizzle-orm'
import { DEFAULT_TIMEOUT_MS } from '../../connectors/api.ts'
import { connectorFor, notAvailableMessage } from '../../connectors/registry.ts'
import { createGuardedFetch } from '../../connectors/shared/guarded-fetch.ts'
import { evaluatePath } from '../../connectors/shared/json-path.ts'
import { type ConnectorContext, ConnectorError, type SourceRecord } from '../../connectors/types.ts'
import { dataSources, records, type SyncTrigger, syncRuns } from '../../db/schema.ts'
import { conflict } from '../../errors.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import { type DataSourceRow, type SyncRunRow, toSyncRunDto } from './datasources.schemas.ts'
import { SecretUnavailableError, unsealConfig } from './datasources.secrets.ts'

/** Rows per multi-row INSERT of records. */
export const INSERT_CHUNK = 500
/** How long a lease holds: longer than the longest connector time limit (5 min) plus writing. */
const LEASE_MS = 10 * 60 * 1000

export interface SyncOutcome {
  source: DataSourceRow
  run: SyncRunRow
  recordsProcessed: number
  message: string
}

const affected = (r: unknown) =>
  Number((r as { rowsAffected?: number }).rowsAffected ?? (r as { meta?: { changes?: number } }).meta?.changes ?? 0)

/**
 * Takes the source's lease and opens a sync run (DATA-ENGINE: Sync lifecycle): the run row and
 * the lease are written in one batch, both only when no live lease exists, so two runners can
 * never both win. A held lease is a 409 carrying the running sync run.
 */
export async function beginSync(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncRunRow> {
  const now = isoNow(ctx.clock)
  const expires = new Date(ctx.clock.now().getTime() + LEASE_MS).toISOString()
  const free = sql`id = ${source.id} AND tenant_id = ${ctx.scope.tenantId} AND (lease_run_id IS NULL OR lease_expires_at < ${now})`
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
  if (affected(leased) === 1 && run) return run
  throw conflict(`A synchronisation of data source ${source.id} is already running`, run ? toSyncRunDto(run) : null)
}

/**
 * Runs an opened sync to its end (DATA-ENGINE: full sync, generation switch): records go into the
 * run's new generation in batches; success switches `current_generation`, drops the old
 * generation, finishes the run and records the SYNC change in ONE batch. A failure drops the
 * partial generation instead, so readers keep seeing the previous one. Never throws for a
 * source failure: the outcome carries `syncStatus: 'error'` and a clear `errorMessage`.
 */
export async function executeSync(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow): Promise<SyncOutcome> {
  const started = Date.now()
  const counts = { rowsRead: 0, rowsWritten: 0, rowsDeleted: 0 }
  try {
    // Leftovers of a run that crashed while writing this generation.
    await ctx.db.delete(records).where(and(eq(records.dataSourceId, source.id), eq(records.generation, run.generation)))
    await readAndWrite(ctx, source, run, counts)
    counts.rowsDeleted = await countRemovedKeys(ctx, source.id, run.generation)
  } catch (err) {
    return fail(ctx, source, run, counts, errorMessageOf(ctx, source, run, err), Date.now() - started)
  }
  const now = isoNow(ctx.clock)
  const message = `${counts.rowsWritten} records synchronised from ${source.type} source`
  await ctx.db.batch([
    ctx.db
      .update(dataSources)
      .set({
        currentGeneration: run.generation,
        syncStatus: 'success',
        lastSyncAt: now,
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
          lt(records.generation, run.generation),
          sql`(SELECT current_generation FROM data_sources WHERE id = ${source.id}) = ${run.generation}`,
        ),
      ),
    ctx.db
      .update(syncRuns)
      .set({ status: 'success', finishedAt: now, durationMs: Date.now() - started, ...counts })
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
    notifyViewOwners(ctx, { panelId: source.panelId, type: 'DATA_CHANGED', impact: 'info', message }),
  ])
  return outcome(ctx, source, run, counts.rowsWritten, message)
}

/** beginSync + executeSync: the sync a request waits for (create, POST …/sync). */
export async function runSync(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncOutcome> {
  return executeSync(ctx, source, await beginSync(ctx, source, trigger))
}

/**
 * Opens the run (so a held lease is still a 409 to the caller) and lets the sync go on in the
 * background; its failures end up on the source and the run, anything unexpected in the log.
 */
export async function runSyncInBackground(ctx: ServiceContext, source: DataSourceRow, trigger: SyncTrigger): Promise<SyncRunRow> {
  const run = await beginSync(ctx, source, trigger)
  executeSync(ctx, source, run).catch((err) =>
    ctx.log.error('background sync failed', { dataSourceId: source.id, runId: run.id, error: (err as Error)?.message }),
  )
  return run
}

// --- Internal helpers ---

async function readAndWrite(
  ctx: ServiceContext,
  source: DataSourceRow,
  run: SyncRunRow,
  counts: { rowsRead: number; rowsWritten: number },
) {
  const connector = connectorFor(source.type)
  if (!connector) throw new ConnectorError(notAvailableMessage(source.type))
  const plain = await unsealConfig(ctx.secrets, source.config)
  const parsed = connector.configSchema.safeParse(plain)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `config.${i.path.join('.')}: ${i.message}`).join('; ')
    throw new ConnectorError(`Invalid configuration: ${issues}`)
  }
  const timeout = typeof plain.timeout === 'number' && plain.timeout > 0 ? plain.timeout : DEFAULT_TIMEOUT_MS
  const cctx: ConnectorContext = {
    signal: AbortSignal.timeout(timeout),
    fetch: createGuardedFetch({
      fetch: ctx.outbound.fetch,
      resolveHost: ctx.outbound.resolveHost,
      allowPrivate: ctx.config.allowPrivateNetworkSources,
    }),
    log: ctx.log,
    now: () => ctx.clock.now(),
  }
  const keyField = typeof plain.keyField === 'string' && plain.keyField !== '' ? plain.keyField : undefined
  const seen = new Set<string>()
  for await (const batch of connector.read(parsed.data, cctx)) {
    counts.rowsRead += batch.length
    const now = isoNow(ctx.clock)
    const rows = []
    for (const record of batch) {
      const key = await uniqueKey(record, keyField, seen)
      rows.push({
        tenantId: source.tenantId,
        panelId: source.panelId,
        dataSourceId: source.id,
        generation: run.generation,
        key,
        data: record.data,
        createdAt: now,
        updatedAt: now,
      })
    }
    const inserts = []
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      inserts.push(
        ctx.db
          .insert(records)
          .values(rows.slice(i, i + INSERT_CHUNK))
          .onConflictDoUpdate({
            target: [records.dataSourceId, records.generation, records.key],
            set: { data: sql`excluded.data`, updatedAt: sql`excluded.updated_at` },
          }),
      )
    }
    if (inserts.length > 0) await ctx.db.batch(inserts as [(typeof inserts)[number], ...typeof inserts])
  }
  counts.rowsWritten = seen.size
}

/**
 * A record's key (DATA-ENGINE: Records): the `keyField` value, else the connector's key, else a
 * SHA-256 of the content. Identical rows without a key stay distinct (`<hash>#2`); rows sharing
 * a `keyField` value are one record, the last read wins.
 */
async function uniqueKey(record: SourceRecord, keyField: string | undefined, seen: Set<string>): Promise<string> {
  const byField = keyField === undefined ? undefined : evaluatePath(record.data, keyField)
  let key: string
  if (byField !== undefined && byField !== null && byField !== '') {
    key = typeof byField === 'string' ? byField : JSON.stringify(byField)
  } else if (record.key) {
    key = record.key
  } else {
    const hash = await sha256(canonicalJson(record.data))
    key = hash
    for (let n = 2; seen.has(key); n++) key = `${hash}#${n}`
  }
  seen.add(key)
  return key
}

async function sha256(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** JSON with object keys sorted, so the same content always hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** Keys of the current generation that the new one no longer has. */
async function countRemovedKeys(ctx: ServiceContext, sourceId: number, generation: number): Promise<number> {
  const [row] = await ctx.db.all<{ n: number }>(sql`
    SELECT count(*) AS n FROM records o
    WHERE o.data_source_id = ${sourceId} AND o.generation < ${generation}
      AND NOT EXISTS (SELECT 1 FROM records n
                      WHERE n.data_source_id = o.data_source_id AND n.generation = ${generation} AND n.key = o.key)`)
  return Number(row?.n ?? 0)
}

function errorMessageOf(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, err: unknown): string {
  if (err instanceof ConnectorError || err instanceof SecretUnavailableError) return err.message
  ctx.log.error('sync failed unexpectedly', {
    requestId: ctx.meta.requestId,
    dataSourceId: source.id,
    runId: run.id,
    error: err instanceof Error ? err.message : String(err),
  })
  return `Synchronisation failed because of an internal error (request ${ctx.meta.requestId})`
}

async function fail(
  ctx: ServiceContext,
  source: DataSourceRow,
  run: SyncRunRow,
  counts: { rowsRead: number },
  error: string,
  durationMs: number,
): Promise<SyncOutcome> {
  const now = isoNow(ctx.clock)
  await ctx.db.batch([
    ctx.db.delete(records).where(and(eq(records.dataSourceId, source.id), eq(records.generation, run.generation))),
    ctx.db
      .update(dataSources)
      .set({ syncStatus: 'error', errorMessage: error, leaseRunId: null, leaseExpiresAt: null })
      .where(and(eq(dataSources.id, source.id), eq(dataSources.leaseRunId, run.id))),
    ctx.db
      .update(syncRuns)
      .set({ status: 'error', error, finishedAt: now, durationMs, rowsRead: counts.rowsRead, rowsWritten: 0, rowsDeleted: 0 })
      .where(eq(syncRuns.id, run.id)),
    changeInsert(ctx, {
      panelId: source.panelId,
      entityType: 'DataSource',
      entityId: source.id,
      action: 'SYNC',
      changes: { syncStatus: { oldValue: source.syncStatus, newValue: 'error' }, errorMessage: { newValue: error } },
    }),
  ])
  return outcome(ctx, source, run, 0, `Synchronisation failed: ${error}`)
}

async function outcome(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, recordsProcessed: number, message: string) {
  const [[fresh], [finished]] = await ctx.db.batch([
    ctx.db.select().from(dataSources).where(eq(dataSources.id, source.id)),
    ctx.db.select().from(syncRuns).where(eq(syncRuns.id, run.id)),
  ])
  return { source: fresh ?? source, run: finished ?? run, recordsProcessed, message }
}
