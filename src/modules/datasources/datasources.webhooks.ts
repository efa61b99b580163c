import { and, eq, inArray, type SQL, sql } from 'drizzle-orm'
import { IMPORT_ONLY_MESSAGE } from '../../connectors/registry.ts'
import type { SourceRecord } from '../../connectors/types.ts'
import { PUSH_ONLY_MESSAGE, WebhookConfig, type WebhookEventKind } from '../../connectors/webhook.ts'
import type { ServiceContext } from '../../context.ts'
import { systemContext } from '../../context.ts'
import { type BatchStatement, runBatch } from '../../db/client.ts'
import { dataSources, type SyncTrigger, syncRuns, webhookEvents } from '../../db/schema.ts'
import type { Deps } from '../../deps.ts'
import { AppError, conflict, invalid } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { loadPanelPlan } from '../../rowstore/materialise.ts'
import { sourceExists } from '../../rowstore/record-sql.ts'
import { keyRecords, newKeySet } from '../../rowstore/records.ts'
import { writeRows } from '../../rowstore/write.ts'
import type { DataSourceRow, SyncRunRow } from './datasources.schemas.ts'
import { unsealConfig } from './datasources.secrets.ts'
import { type Counts, countGeneration, fail, finish, syncWrite } from './datasources.sync-end.ts'
import { beginSync, leaseHolder, renewLease, SNAPSHOT_LEASE_MS } from './datasources.sync-lease.ts'
import { parseEvents, verifySignature, type WebhookEvent } from './datasources.webhooks.parse.ts'

/** The largest webhook body read (413 beyond). */
export const MAX_WEBHOOK_BODY = 1024 * 1024
/** Event ids are remembered this long for duplicate detection. */
export const EVENT_ID_RETENTION_MS = 30 * 24 * 60 * 60 * 1000

/** What a delivery did: events received, applied, ignored (kind not subscribed) and duplicates. */
export interface WebhookReceipt {
  received: number
  applied: number
  ignored: number
  duplicates: number
}

/**
 * Applies one delivery to the webhook source of `endpoint` (DATA-ENGINE: Webhook): checks the
 * HMAC-SHA256 signature of the raw body, validates every event before applying any, skips kinds
 * the source does not subscribe and event ids seen before, then applies the rest in order.
 * Outside a snapshot each run of data events commits in one batch with its sync run, the SYNC
 * change and the event ids; inside one they go into the snapshot's generation.
 */
export async function receiveWebhook(
  deps: Deps,
  endpoint: string,
  header: (name: string) => string | undefined,
  body: Uint8Array<ArrayBuffer>,
): Promise<WebhookReceipt> {
  const source = await sourceOf(deps, endpoint)
  const ctx = systemContext(deps, source.tenantId)
  const config = WebhookConfig.parse(await unsealConfig(ctx.secrets, source.config))
  if (config.verifySignature) await verifySignature(config.secret ?? '', header(config.signatureHeader), body)
  const events = parseEvents(body, config)
  const receipt: WebhookReceipt = { received: events.length, applied: 0, ignored: 0, duplicates: 0 }
  const ids = events.flatMap((e) => (e.id === undefined ? [] : [e.id]))
  const seen = new Set(
    ids.length === 0
      ? []
      : (
          await ctx.db
            .select({ id: webhookEvents.eventId })
            .from(webhookEvents)
            .where(and(eq(webhookEvents.dataSourceId, source.id), inArray(webhookEvents.eventId, ids)))
        ).map((r) => r.id),
  )
  let group: WebhookEvent[] = []
  for (const event of events) {
    if (!(config.events as string[]).includes(event.event)) {
      receipt.ignored++
      continue
    }
    if (event.id !== undefined && seen.has(event.id)) {
      receipt.duplicates++
      continue
    }
    if (event.id !== undefined) seen.add(event.id)
    receipt.applied++
    if (event.event.startsWith('data.')) {
      group.push(event)
      continue
    }
    await applyData(ctx, source.id, group, config.keyField)
    group = []
    await applySyncEvent(ctx, source.id, event)
  }
  await applyData(ctx, source.id, group, config.keyField)
  return receipt
}

/**
 * The `webhook_endpoint` column of a source: the config's endpoint for a webhook source, else
 * null. An endpoint another source (of any tenant) uses is a 409: endpoints are service-wide.
 */
export async function claimWebhookEndpoint(
  ctx: ServiceContext,
  type: string,
  config: Record<string, unknown>,
  exceptId?: number,
): Promise<string | null> {
  if (type !== 'webhook' || typeof config.endpoint !== 'string') return null
  const [taken] = await ctx.db
    .select({ id: dataSources.id })
    .from(dataSources)
    .where(
      and(
        eq(dataSources.webhookEndpoint, config.endpoint),
        exceptId === undefined ? undefined : sql`${dataSources.id} <> ${exceptId}`,
      ),
    )
    .limit(1)
  if (taken) throw conflict(`The webhook endpoint '${config.endpoint}' is already in use; choose another`)
  return config.endpoint
}

/**
 * Webhook sources are pushed to and import sources filled by imports: a manual sync of either is a
 * 400 saying so, never a made-up success (and no sync run is opened).
 */
export function refusePull(source: DataSourceRow) {
  if (source.type === 'webhook') throw invalid([{ path: 'type', message: PUSH_ONLY_MESSAGE }], PUSH_ONLY_MESSAGE)
  if (source.type === 'import') throw invalid([{ path: 'type', message: IMPORT_ONLY_MESSAGE }], IMPORT_ONLY_MESSAGE)
}

// --- Internal helpers ---

async function sourceOf(deps: Deps, endpoint: string): Promise<DataSourceRow> {
  const [source] = await deps.db
    .select()
    .from(dataSources)
    .where(
      and(
        eq(dataSources.webhookEndpoint, endpoint),
        eq(dataSources.type, 'webhook'),
        sql`EXISTS (SELECT 1 FROM panels p WHERE p.id = ${dataSources.panelId} AND p.deleted_at IS NULL)`,
      ),
    )
    .limit(1)
  if (!source) throw new AppError('NOT_FOUND', `No webhook endpoint '${endpoint}'`, null, 'Webhook endpoint not found')
  return source
}

/** The open snapshot of the source (a webhook run holding the lease), if any. */
async function openSnapshot(ctx: ServiceContext, source: DataSourceRow): Promise<SyncRunRow | undefined> {
  const holder = leaseHolder(ctx, source)
  if (holder === undefined) return undefined
  const [run] = await ctx.db.select().from(syncRuns).where(eq(syncRuns.id, holder))
  if (run?.trigger === 'webhook' && run.status === 'syncing') return run
  throw conflict(`A synchronisation of data source ${source.id} is running; deliver again when it has ended`)
}

const freshSource = async (ctx: ServiceContext, id: number) =>
  (await ctx.db.select().from(dataSources).where(eq(dataSources.id, id)))[0] as DataSourceRow

function eventIdStatements(ctx: ServiceContext, source: DataSourceRow, events: WebhookEvent[]): SQL[] {
  const now = ctx.clock.now()
  const ids = events.flatMap((e) => (e.id === undefined ? [] : [e.id]))
  const statements: SQL[] = [
    sql`DELETE FROM webhook_events WHERE data_source_id = ${source.id}
        AND received_at < ${new Date(now.getTime() - EVENT_ID_RETENTION_MS).toISOString()}`,
  ]
  if (ids.length > 0) {
    statements.push(sql`
      INSERT INTO webhook_events (tenant_id, data_source_id, event_id, received_at)
      SELECT ${source.tenantId}, ${source.id}, value, ${now.toISOString()} FROM json_each(${JSON.stringify(ids)})
      WHERE ${sourceExists(source.id)}
      ON CONFLICT (data_source_id, event_id) DO NOTHING`)
  }
  return statements
}

/** Data events in one batch, through the push path with their event ids. */
async function applyData(ctx: ServiceContext, sourceId: number, events: WebhookEvent[], keyField: string) {
  if (events.length === 0) return
  await applyPushed(ctx, sourceId, {
    records: events.flatMap((e) => e.records),
    keyField,
    trigger: 'webhook',
    with: (source) => eventIdStatements(ctx, source, events),
  })
}

/** Records a source was pushed (a webhook delivery, a FHIR notification), applied by `applyPushed`. */
export interface Pushed {
  records: readonly SourceRecord[]
  /** Keys records without their own `key` (a record's `key` is used when the field is absent). */
  keyField?: string
  trigger: Extract<SyncTrigger, 'webhook' | 'subscription'>
  /** The pusher's own statements (event ids, counters), committed in the same batch as the rows. */
  with?: (source: DataSourceRow) => BatchStatement[]
  /**
   * When the batch fails: true when the pusher's own statements failed it on purpose (a claim lost
   * to another instance). The run then ends as one that wrote nothing, not in error; the error is
   * passed on for the pusher to look again.
   */
  lostRace?: () => Promise<boolean>
}

/**
 * The one path of pushed records into the row store (DATA-ENGINE: Webhook; docs/live.md "The
 * write path"): records marked `deleted` are removed by key, the others upserted, in one batch:
 * into the open webhook snapshot's generation (renewing its lease), or into the current generation
 * as a completed sync run of `trigger` with its SYNC change. Another sync holding the source is a
 * 409 (`conflict`) and nothing is written.
 */
export async function applyPushed(ctx: ServiceContext, sourceId: number, pushed: Pushed): Promise<void> {
  if (pushed.records.length === 0) return
  const source = await freshSource(ctx, sourceId)
  const snapshot = await openSnapshot(ctx, source)
  const generation = snapshot ? snapshot.generation : source.currentGeneration
  const all = pushed.records
  const keyField = pushed.keyField
  const upserts = await keyRecords(
    all.filter((r) => !r.deleted),
    keyField,
    newKeySet(),
    ctx.sha256Hex,
  )
  // Keyed as a sync keys them (datasources.sync-read.ts): the key field's value, else the record's key.
  const deletes = (
    await keyRecords(
      all.filter((r) => r.deleted),
      keyField,
      newKeySet(),
      ctx.sha256Hex,
    )
  ).map((r) => r.key)
  const now = isoNow(ctx.clock)
  const rows = { plan: await loadPanelPlan(ctx.db, source.tenantId, source.panelId), now: ctx.clock.now() }
  const change = { source, generation, now, upserts, rows, deletes }
  const own = pushed.with?.(source) ?? []
  if (snapshot) {
    // Into the snapshot's generation, not visible yet: its events come with sync.completed's switch.
    await writeRows(ctx, {
      ...change,
      with: [
        ...own,
        sql`UPDATE sync_runs SET rows_read = rows_read + ${all.length} WHERE id = ${snapshot.id}`,
        renewLease(ctx, snapshot, SNAPSHOT_LEASE_MS),
      ],
    })
    return
  }
  // Outside a snapshot a push is one sync run through the one lifecycle: opened, its rows written
  // through the row store's write protocol, and finished like an incremental sync.
  const run = await beginSync(ctx, source, pushed.trigger)
  const counts: Counts = { rowsRead: all.length, rowsWritten: upserts.length, rowsDeleted: deletes.length, truncated: [] }
  try {
    await writeRows(ctx, { ...change, write: syncWrite(ctx, source, run, now), with: own })
  } catch (err) {
    const none = { ...counts, rowsWritten: 0, rowsDeleted: 0 }
    if (await pushed.lostRace?.()) {
      await finish(ctx, { source, run, counts: none, incremental: true }, 0)
      throw err
    }
    // The run ends now, in error, rather than holding the source until its lease runs out.
    await fail(ctx, { source, run, counts: none, incremental: true }, 'error', 'The delivery could not be written', 0)
    throw err
  }
  await finish(ctx, { source, run, counts, incremental: true }, 0, { notify: true })
}

/**
 * `sync.started` opens a snapshot run (a new generation, a long lease; an open snapshot is
 * abandoned first), `sync.completed` switches to it (records it lacks disappear), `sync.failed`
 * ends it in error and keeps the previous generation. A `sync.failed` without an open snapshot
 * is a sender that could not even start its export: recorded as a run that failed at once.
 */
async function applySyncEvent(ctx: ServiceContext, sourceId: number, event: WebhookEvent) {
  const kind = event.event as WebhookEventKind
  let source = await freshSource(ctx, sourceId)
  const snapshot = await openSnapshot(ctx, source)
  const ids = eventIdStatements(ctx, source, [event]).map((s) => ctx.db.run(s))
  if (kind === 'sync.started') {
    if (snapshot) {
      await fail(ctx, ended(source, snapshot), 'error', 'Superseded by a new sync.started before sync.completed', 0)
      source = await freshSource(ctx, sourceId)
    }
    await beginSync(ctx, source, 'webhook', SNAPSHOT_LEASE_MS)
  } else if (!snapshot && kind === 'sync.failed') {
    // A sender that could not even start its export: a run opened and failed at once, through the
    // one sync lifecycle; records and lastSyncAt stay as they were, as after a failed pull.
    const run = await beginSync(ctx, source, 'webhook')
    await fail(ctx, ended(source, run), 'error', failureMessage(event), 0)
  } else if (!snapshot) {
    throw conflict(`${kind} arrived without an open snapshot: send sync.started first`)
  } else if (kind === 'sync.completed') {
    const counts: Counts = { rowsRead: snapshot.rowsRead, rowsWritten: 0, rowsDeleted: 0, truncated: [] }
    await countGeneration(ctx.db, source.id, snapshot.generation, counts)
    await finish(ctx, { ...ended(source, snapshot), counts }, durationOf(ctx, snapshot), { notify: true })
  } else {
    await fail(ctx, ended(source, snapshot), 'error', failureMessage(event), durationOf(ctx, snapshot))
  }
  await runBatch(ctx.db, ids)
}

const failureMessage = (event: WebhookEvent) => event.message ?? 'The sender reported a failed synchronisation'

const ended = (source: DataSourceRow, run: SyncRunRow) => ({
  source,
  run,
  incremental: false,
  counts: { rowsRead: run.rowsRead, rowsWritten: 0, rowsDeleted: 0, truncated: [] } as Counts,
})

const durationOf = (ctx: ServiceContext, run: SyncRunRow) => ctx.clock.now().getTime() - new Date(run.startedAt).getTime()
