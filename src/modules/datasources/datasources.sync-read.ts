import { eq, type SQL, sql } from 'drizzle-orm'
import { connectorFor, notAvailableMessage } from '../../connectors/registry.ts'
import {
  type Connector,
  type ConnectorContext,
  ConnectorError,
  ReadSuspended,
  type SourceRecord,
} from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { runBatch } from '../../db/client.ts'
import { syncRuns } from '../../db/schema.ts'
import { isoNow } from '../../lib/clock.ts'
import { createGuardedFetch } from '../../lib/egress/guarded-fetch.ts'
import { GenerationDigest } from '../../rowstore/digest.ts'
import { loadPanelPlan, type PanelPlan } from '../../rowstore/materialise.ts'
import { loadPanelMembership, type PanelMembership } from '../../rowstore/membership-plan.ts'
import { dropGeneration, type KeySet, keyRecords, newKeySet, type RowWriter } from '../../rowstore/records.ts'
import { writeRows } from '../../rowstore/write.ts'
import type { DataSourceRow, SyncRunRow } from './datasources.schemas.ts'
import { unsealConfig } from './datasources.secrets.ts'
import { type Counts, countGeneration, syncWrite } from './datasources.sync-end.ts'
import { LEASE_MS, renewLease, SyncCancelled, SyncInterrupted } from './datasources.sync-lease.ts'
import { nextStagedSeq, readStaged, STAGED_PAGE, stageStatement } from './datasources.sync-stage.ts'

/**
 * The read of a sync run (DATA-ENGINE: Sync lifecycle; docs/live.md "The write path"): the
 * connector and its context, then the connector's batches, each committed through the row store's
 * write protocol with the run's lease renewal, counters and cursor; a cancel is seen at each batch
 * boundary, a stopping service or the time limit ends the read. The take and the end of the run
 * are datasources.sync-lease.ts and datasources.sync-end.ts; datasources.sync.ts runs them.
 */

/** What a run reads with: the connector, its parsed config and its mode. */
export interface SyncJob {
  source: DataSourceRow
  run: SyncRunRow
  connector: Connector
  config: unknown
  plain: Record<string, unknown>
  incremental: boolean
  /**
   * The run was suspended by an earlier invocation (it has a checkpoint): its generation already
   * holds what it wrote, its counts go on from the run's.
   */
  resumed: boolean
  counts: Counts
}

/** What a read leaves for the run's end: the digest of a full sync's generation, the plan its rows were made with. */
export interface Read {
  digest?: string
  plan: PanelPlan
  /**
   * The cursor a full read reached (a bulk export's transactionTime): stored with the switch to
   * its generation, never before, so a full sync that fails leaves the cursor where it was.
   */
  cursor?: { value: unknown }
}

/**
 * Opens the run's read: the source's connector and its config (unsealed, validated: a bad one is a
 * ConnectorError naming the fields) and its mode.
 */
export async function openRead(ctx: ServiceContext, source: DataSourceRow, run: SyncRunRow, counts: Counts): Promise<SyncJob> {
  const connector = connectorFor(source.type)
  if (!connector) throw new ConnectorError(notAvailableMessage(source.type))
  const plain = await unsealConfig(ctx.secrets, source.config)
  const parsed = connector.configSchema.safeParse(plain)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `config.${i.path.join('.')}: ${i.message}`).join('; ')
    throw new ConnectorError(`Invalid configuration: ${issues}`)
  }
  const incremental = connector.mode?.(parsed.data) === 'incremental'
  const resumed = run.checkpoint != null
  if (resumed) Object.assign(counts, { rowsRead: run.rowsRead, rowsWritten: run.rowsWritten, rowsDeleted: run.rowsDeleted })
  return { source, run, connector, config: parsed.data, plain, incremental, resumed, counts }
}

/**
 * Reads the connector batch by batch; each batch commits through the row store's write protocol
 * with the lease renewal, counters and cursor. A full sync writes its new generation (no events
 * until its switch): it first clears what a crashed run left of it, and at the end counts what it
 * holds and answers the digest of what it stored. An incremental sync upserts and deletes by key
 * in the visible generation, its events with each batch.
 */
export async function readAndWrite(ctx: ServiceContext, job: SyncJob): Promise<Read> {
  const { source, run, counts, incremental, resumed } = job
  const plan = await loadPanelPlan(ctx.db, source.tenantId, source.panelId)
  // An incremental sync writes the visible generation: each batch moves the views' membership.
  const membership = incremental
    ? await loadPanelMembership(ctx.db, source.tenantId, source.panelId, { at: ctx.clock.now() })
    : undefined
  // Leftovers of a run that crashed while writing this generation (a resumed run's are its own rows).
  if (!incremental && !resumed) await runBatch(ctx.db, dropGeneration(source.id, run.generation))
  const limits = ctx.config.syncLimits
  const timeout = AbortSignal.timeout(limits.timeoutMs)
  // A stopping service aborts the connector's reads too, so a sync waiting on its source hands back at once.
  const signal = ctx.stopping ? AbortSignal.any([timeout, ctx.stopping]) : timeout
  const cursor: { pending?: { value: unknown }; checkpoint?: { value: unknown } } = {}
  const cancel = { seen: false }
  const cctx = connectorContext(ctx, job, signal, cursor, cancel)
  const keyField = typeof job.plain.keyField === 'string' && job.plain.keyField !== '' ? job.plain.keyField : undefined
  const seen: KeySet = newKeySet()
  let fullCursor: { value: unknown } | undefined
  // An incremental read that applies at its end stages its batches until it has read them all.
  const staging = incremental && job.connector.appliesAtEnd?.(job.config) === true
  const stage = {
    seq: staging && resumed ? await nextStagedSeq(ctx, run.id) : 0,
    cursor: undefined as { value: unknown } | undefined,
  }
  // A full sync digests the rows it stores, so its end can tell an unchanged generation at once; a
  // resumed one did not see the rows of its earlier invocations, so its digest is unknown.
  const rows: RowWriter = { plan, now: ctx.clock.now(), digest: incremental || resumed ? undefined : new GenerationDigest() }
  try {
    for await (const batch of job.connector.read(job.config, cctx)) {
      counts.rowsRead += batch.length
      if (counts.rowsRead > limits.maxRecords) {
        throw new ConnectorError(
          `The source has more than ${limits.maxRecords} records, the service's limit for one synchronisation`,
        )
      }
      const advanced = cursor.pending
      const checkpoint = cursor.checkpoint
      cursor.pending = undefined
      cursor.checkpoint = undefined
      if (!incremental && advanced) fullCursor = advanced
      if (staging) {
        if (advanced) stage.cursor = advanced
        await stageBatch(ctx, job, batch, stage.seq, checkpoint)
        stage.seq += batch.length
        if (ctx.stopping?.aborted) throw new SyncInterrupted()
        continue
      }
      await writeBatch(
        ctx,
        job,
        batch,
        { seen: incremental ? newKeySet() : seen, keyField, rows, membership },
        incremental ? advanced : undefined,
        checkpoint,
      )
      if (ctx.stopping?.aborted) throw new SyncInterrupted()
    }
    if (staging) await applyStaged(ctx, job, { keyField, rows, membership }, stage.cursor)
    if (!incremental) await countGeneration(ctx.db, source.id, run.generation, counts)
    return { digest: rows.digest?.toString(), plan, cursor: fullCursor }
  } catch (err) {
    // The connector stopped because it saw the cancel (connectorContext.cancelRequested).
    if (cancel.seen) throw new SyncCancelled()
    // A resumable read handed the rest of its run to a later invocation (datasources.sync-end.ts `suspend`).
    if (err instanceof ReadSuspended) throw err
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

// --- Internal helpers ---

/**
 * One batch through the write protocol, with the lease renewal, run counters and cursor; stops
 * when a cancel was requested. A full sync keys every record (one key set for the run: rows
 * sharing a key are one record); an incremental one upserts and deletes by key.
 */
async function writeBatch(
  ctx: ServiceContext,
  job: SyncJob,
  batch: SourceRecord[],
  { seen, keyField, rows, membership }: { seen: KeySet; keyField?: string; rows: RowWriter; membership?: PanelMembership },
  cursor: { value: unknown } | undefined,
  checkpoint: { value: unknown } | undefined,
) {
  const { source, run, counts, incremental } = job
  const upserts = await keyRecords(incremental ? batch.filter((r) => !r.deleted) : batch, keyField, seen, ctx.sha256Hex)
  const deletes = incremental
    ? (
        await keyRecords(
          batch.filter((r) => r.deleted),
          keyField,
          newKeySet(),
          ctx.sha256Hex,
        )
      ).map((r) => r.key)
    : []
  counts.rowsWritten += upserts.length
  counts.rowsDeleted += deletes.length
  const now = isoNow(ctx.clock)
  const own: SQL[] = []
  if (checkpoint) own.push(saveCheckpoint(job.run, checkpoint.value))
  if (cursor) {
    own.push(sql`UPDATE data_sources SET config = json_set(config, '$.lastSyncValue', json(${JSON.stringify(cursor.value ?? null)}))
      WHERE id = ${source.id}`)
  }
  const results = await writeRows(ctx, {
    source,
    generation: incremental ? source.currentGeneration : run.generation,
    // A full sync's generation is not visible yet: its events come with its switch.
    write: incremental ? { ...syncWrite(ctx, source, run, now), eventKey: `sync:${run.id}:${counts.rowsRead}` } : undefined,
    membership,
    now,
    upserts,
    rows,
    deletes,
    with: [
      ...own,
      renewLease(ctx, run, LEASE_MS),
      sql`UPDATE sync_runs SET rows_read = ${counts.rowsRead}, rows_written = ${counts.rowsWritten},
        rows_deleted = ${counts.rowsDeleted} WHERE id = ${run.id}`,
      ctx.db.select({ cancel: syncRuns.cancelRequested }).from(syncRuns).where(eq(syncRuns.id, run.id)),
    ],
  })
  const [state] = results[results.length - 1] as { cancel: boolean }[]
  if (state?.cancel) throw new SyncCancelled()
}

/**
 * A batch of a read that applies at its end, staged (datasources.sync-stage.ts) with the run's
 * lease renewal, counters and progress; stops when a cancel was requested.
 */
async function stageBatch(
  ctx: ServiceContext,
  job: SyncJob,
  batch: SourceRecord[],
  seq: number,
  checkpoint: { value: unknown } | undefined,
) {
  const { run, counts } = job
  const results = await runBatch(ctx.db, [
    ...(batch.length > 0 ? [stageStatement(run.id, seq, batch)] : []),
    ...(checkpoint ? [saveCheckpoint(run, checkpoint.value)] : []),
    renewLease(ctx, run, LEASE_MS),
    sql`UPDATE sync_runs SET rows_read = ${counts.rowsRead} WHERE id = ${run.id}`,
    ctx.db.select({ cancel: syncRuns.cancelRequested }).from(syncRuns).where(eq(syncRuns.id, run.id)),
  ])
  const [state] = results[results.length - 1] as { cancel: boolean }[]
  if (state?.cancel) throw new SyncCancelled()
}

/**
 * Applies what a read that applies at its end staged, now that it has read to its end: a page at
 * a time through the run's incremental write (its events, counters and lease), the cursor with
 * the last page (or alone when nothing changed).
 */
async function applyStaged(
  ctx: ServiceContext,
  job: SyncJob,
  write: { keyField?: string; rows: RowWriter; membership?: PanelMembership },
  cursor: { value: unknown } | undefined,
) {
  let seq = 0
  for (;;) {
    // One more than a page: whether this page is the last one, which brings the cursor.
    const page = await readStaged(ctx, job.run.id, seq, STAGED_PAGE + 1)
    const last = page.length <= STAGED_PAGE
    const records = page.slice(0, STAGED_PAGE)
    await writeBatch(
      ctx,
      job,
      records.map((r) => r.record),
      { seen: newKeySet(), ...write },
      last ? cursor : undefined,
      undefined,
    )
    if (last) return
    seq = records[records.length - 1].seq + 1
  }
}

/** The context a connector reads with: the signal, the egress guard, its cache, limits, cursor and truncation notes. */
function connectorContext(
  ctx: ServiceContext,
  job: SyncJob,
  signal: AbortSignal,
  cursor: { pending?: { value: unknown }; checkpoint?: { value: unknown } },
  cancel: { seen: boolean },
): ConnectorContext {
  const limits = ctx.config.syncLimits
  // Counted from the invocation's start where deps are per invocation (Workers), else from the run's.
  const budgetEnds = (ctx.invocationStartedAt ?? performance.now()) + (limits.invocationMs ?? Number.POSITIVE_INFINITY)
  return {
    ...connectorBase(ctx, job.source, signal),
    files: ctx.files,
    openSqlite: ctx.openSqlite,
    cursor: job.plain.lastSyncValue,
    advanceCursor: (value) => {
      cursor.pending = { value }
    },
    truncated: (message) => {
      job.counts.truncated.push(message)
    },
    cancelRequested: async () => {
      const [state] = await ctx.db.select({ cancel: syncRuns.cancelRequested }).from(syncRuns).where(eq(syncRuns.id, job.run.id))
      if (state?.cancel) cancel.seen = true
      return cancel.seen
    },
    resume: {
      saved: job.run.checkpoint ?? undefined,
      save: async (state) => {
        await runBatch(ctx.db, [saveCheckpoint(job.run, state), renewLease(ctx, job.run, LEASE_MS)])
      },
      saveWithNextBatch: (state) => {
        cursor.checkpoint = { value: state }
      },
      remainingMs: () => budgetEnds - performance.now(),
      handedBack: () => ctx.stopping?.aborted === true,
    },
  }
}

/** The run's progress saved (a resumable read's checkpoint), while the run is still open. */
const saveCheckpoint = (run: SyncRunRow, state: unknown): SQL =>
  sql`UPDATE sync_runs SET checkpoint = ${JSON.stringify(state ?? null)} WHERE id = ${run.id} AND status = 'syncing'`

/**
 * What every connector context holds, in a sync or outside one (a Subscription's POST, an id-only
 * read): the signal, the egress guard, the source's cache, the clock and the sync limits.
 */
export function connectorBase(
  ctx: ServiceContext,
  source: DataSourceRow,
  signal: AbortSignal,
): Omit<ConnectorContext, 'advanceCursor' | 'truncated'> {
  const limits = ctx.config.syncLimits
  return {
    signal,
    cache: sourceCache(ctx, source),
    fetch: createGuardedFetch({
      fetch: ctx.outbound.fetch,
      resolveHost: ctx.outbound.resolveHost,
      allowPrivate: ctx.config.allowPrivateNetworkSources,
    }),
    log: ctx.log,
    now: () => ctx.clock.now(),
    runtime: ctx.runtime,
    allowPrivateNetwork: ctx.config.allowPrivateNetworkSources,
    resolveHost: ctx.outbound.resolveHost,
    limits: { maxBytes: limits.maxBytes, maxRecords: limits.maxRecords },
  }
}

/** The per-source cache a connector gets (e.g. OAuth2 tokens), under the tenant's key space. */
export function sourceCache(ctx: ServiceContext, source: DataSourceRow): ConnectorContext['cache'] {
  const key = (k: string) => `datasource:${source.id}:${k}`
  return {
    get: (k) => ctx.cache.get(source.tenantId, key(k)),
    set: (k, value, ttlSeconds) => ctx.cache.set(source.tenantId, key(k), value, ttlSeconds),
  }
}
