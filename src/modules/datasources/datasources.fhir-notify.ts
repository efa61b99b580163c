import { and, eq, type SQL, sql } from 'drizzle-orm'
import type { FhirConfig } from '../../connectors/fhir.ts'
import {
  type Notification,
  NotificationError,
  type NotifiedEntry,
  readNotification,
  type SubscriptionConfig,
  switchedOn,
} from '../../connectors/fhir-subscription-config.ts'
import { instantOf, isFhirId } from '../../connectors/fhir-types.ts'
import { ConnectorError, type SourceRecord } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { systemContext } from '../../context.ts'
import { runBatch } from '../../db/client.ts'
import { dataSources, fhirSourceSubscriptions } from '../../db/schema.ts'
import type { Deps } from '../../deps.ts'
import { AppError, invalid, isConflict, unauthorized } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { CATCH_UP_MARGIN_MS, catchUp, owe, startCatchUp } from './datasources.fhir-catch-up.ts'
import {
  baseOf,
  checkUpstream,
  fhirClient,
  type SubscriptionRow,
  sha256Hex,
  subscribedConfig,
  subscriptionOf,
  switchedOffConflict,
} from './datasources.fhir-subscription.ts'
import type { DataSourceRow } from './datasources.schemas.ts'
import { applyPushed } from './datasources.webhooks.ts'

/**
 * The receiver of a `fhir` source's Subscription notifications (`POST /fhir-notify/{token}`;
 * docs/connectors-fhir.md "Subscription mode"). A notification is checked by its token and its
 * channel header, then: a handshake or heartbeat is acknowledged; an event notification's changes
 * go through the push path (datasources.webhooks.ts `applyPushed`, the row store's one write
 * protocol) with a claim on the event counter in the same batch, so a duplicate is applied once
 * even across instances; a gap, a restart or an `error` status owes a catch-up search of
 * `_lastUpdated` (`catchUp`). A source whose feed is switched off refuses with 409. All state lives
 * in `fhir_source_subscriptions`.
 */

/** The largest notification read (413 beyond): a full-resource Bundle of a few resources. */
export const MAX_NOTIFICATION_BODY = 8 * 1024 * 1024
const CLAIM_ATTEMPTS = 5

/** What a notification did. */
export interface NotifyReceipt {
  type: string
  applied: number
  duplicate: boolean
  catchUp: boolean
}

/** The 401 of a wrong or missing token or channel header: the same answer for each, nothing changes. */
const refused = () => unauthorized('UNAUTHORIZED', 'The notification token or its Authorization header is not valid')

/** How a classic rest-hook sender addressed the endpoint: `{endpoint}/{type}/{id}` with its method. */
export interface Addressed {
  type: string
  id: string
  method: 'POST' | 'PUT' | 'DELETE'
}

/** The most id-only entries one notification reads from the server; past it, the catch-up reads them. */
export const MAX_ID_ONLY_READS = 100

/**
 * Handles one notification of a verified sender (`verifySender`, before the body is read); answers
 * what it did. `addressed`: the sender appended the resource's address to the endpoint (a classic
 * rest-hook).
 */
export async function receiveFhirNotification(
  sender: Verified,
  body: Uint8Array,
  options: { addressed?: Addressed } = {},
): Promise<NotifyReceipt> {
  const { ctx, row, source, config } = sender
  const text = new TextDecoder().decode(body).trim()
  const receipt: NotifyReceipt = { type: 'event-notification', applied: 0, duplicate: false, catchUp: false }
  const classic = config.subscription.criteria !== undefined
  if (options.addressed && !classic) {
    throw invalid([{ path: 'url', message: 'a topic-based Subscription notifies at the endpoint itself' }])
  }
  if (classic && (options.addressed || !isBundle(text))) {
    // Classic R4 criteria carry no event numbers, so nothing tells a missed notification: each one
    // applies the resource it carries (or the removal it addresses) at once, and owes a catch-up
    // search, which finds whatever else changed.
    receipt.applied = await applyClassic(ctx, source, config, text, options.addressed)
    await owe(ctx, source.id, row.caughtUpAt, { lastNotificationAt: isoNow(ctx.clock), status: 'active' })
    receipt.catchUp = true
    startCatchUp(ctx, source.id)
    return receipt
  }
  let notification: Notification
  try {
    notification = readNotification(text === '' ? undefined : JSON.parse(text))
  } catch (err) {
    if (err instanceof NotificationError) throw invalid([{ path: 'body', message: err.message }], err.message)
    throw new AppError('INVALID_JSON', 'The notification body is not valid JSON')
  }
  receipt.type = notification.type
  if (notification.type === 'event-notification') {
    Object.assign(receipt, await applyEvents(ctx, source, config, notification))
  } else {
    receipt.catchUp = await acknowledge(ctx, source.id, notification)
  }
  if (notification.status === 'error') {
    // The server reports trouble on its side: what it could not send is searched for, and the
    // Subscription is read (made again when the server gave it up).
    const fresh = await subscriptionOf(ctx, source.id)
    if (fresh) await owe(ctx, source.id, fresh.caughtUpAt, {})
    ctx.defer(recheck(ctx, source), { what: 'fhir subscription check', dataSourceId: source.id })
    return { ...receipt, catchUp: true }
  }
  if (receipt.catchUp) startCatchUp(ctx, source.id)
  return receipt
}

async function recheck(ctx: ServiceContext, source: DataSourceRow) {
  await checkUpstream(ctx, source)
  await catchUp(ctx, source.id)
}

// --- Internal helpers ---

export type Verified = {
  ctx: ServiceContext
  row: SubscriptionRow
  source: DataSourceRow
  config: FhirConfig & { subscription: SubscriptionConfig }
}

/**
 * The sender of a notification, checked before its body is read: the source of a token, after checking the token (found by its hash, then compared whole in
 * constant time) and the channel header (compared in constant time). Any failure is the same 401.
 * A source whose live feed is switched off answers 409 (after both checks) and nothing changes.
 */
export async function verifySender(deps: Deps, token: string, authorization: string | undefined): Promise<Verified> {
  if (!/^[A-Za-z0-9_-]{20,200}$/.test(token)) throw refused()
  const hash = await sha256Hex(token)
  const [row] = await deps.db
    .select()
    .from(fhirSourceSubscriptions)
    .where(
      and(
        eq(fhirSourceSubscriptions.tokenHash, hash),
        sql`EXISTS (SELECT 1 FROM data_sources d JOIN panels p ON p.id = d.panel_id
          WHERE d.id = ${fhirSourceSubscriptions.dataSourceId} AND p.deleted_at IS NULL)`,
      ),
    )
    .limit(1)
  if (!row) throw refused()
  const ctx = systemContext(deps, row.tenantId)
  const [storedToken, secret] = await Promise.all([ctx.secrets.decrypt(row.token), ctx.secrets.decrypt(row.secret)])
  const tokenOk = await sameText(token, storedToken)
  const headerOk = await sameText(authorization ?? '', `Bearer ${secret}`)
  if (!tokenOk || !headerOk) throw refused()
  const [source] = (await ctx.db.select().from(dataSources).where(eq(dataSources.id, row.dataSourceId))) as DataSourceRow[]
  const config = source && (await subscribedConfig(ctx, source))
  if (!config) throw refused()
  // Only a sender that proved the token and header learns that the feed is switched off.
  if (!switchedOn(config.subscription)) throw switchedOffConflict()
  return { ctx, row, source, config }
}

/** Equality of two texts in constant time: their SHA-256 digests compared byte by byte, all of them. */
async function sameText(a: string, b: string): Promise<boolean> {
  const enc = new TextEncoder()
  const [x, y] = await Promise.all([
    crypto.subtle.digest('SHA-256', enc.encode(a)),
    crypto.subtle.digest('SHA-256', enc.encode(b)),
  ])
  const [p, q] = [new Uint8Array(x), new Uint8Array(y)]
  let diff = 0
  for (let i = 0; i < p.length; i++) diff |= p[i] ^ q[i]
  return diff === 0
}

const isBundle = (text: string) => {
  if (!text.startsWith('{')) return false
  try {
    return (JSON.parse(text) as { resourceType?: unknown }).resourceType === 'Bundle'
  } catch {
    return false
  }
}

/**
 * A handshake or heartbeat: the status and last notification are recorded; one whose
 * `events-since-subscription-start` is beyond what was seen means events were missed (a lost
 * notification, a restart of ours or theirs), one below it that the server's count started again:
 * either owes a catch-up, and the count is taken as the server gives it. Answers whether a
 * catch-up is owed.
 */
async function acknowledge(ctx: ServiceContext, sourceId: number, n: Notification): Promise<boolean> {
  const now = isoNow(ctx.clock)
  // A handshake we acknowledge makes the Subscription active (the server still says `requested`).
  const status = n.type === 'handshake' && (n.status === undefined || n.status === 'requested') ? 'active' : n.status
  const since = n.eventsSinceStart
  const [row] = await ctx.db
    .update(fhirSourceSubscriptions)
    .set({
      lastNotificationAt: now,
      ...(status ? { status, error: null } : {}),
      // Beyond what was seen: events were missed. Below it: the server's count started again (a
      // restart that lost its state): the count is taken as it is now. Either way, a catch-up.
      ...(since !== undefined
        ? {
            catchUpFrom: sql`CASE WHEN ${since} <> events_since_start AND catch_up_from IS NULL THEN caught_up_at ELSE catch_up_from END`,
            eventsSinceStart: since,
          }
        : {}),
      updatedAt: now,
    } as never)
    .where(eq(fhirSourceSubscriptions.dataSourceId, sourceId))
    .returning()
  return row?.catchUpFrom != null
}

/**
 * An event notification: its changes, read (id-only entries fetched), then written through the
 * push path in one batch with the claim on the counter. The claim moves `events_since_start` from
 * the value read to the notification's highest number; when another instance moved it first the
 * batch fails whole (the guard) and the notification is looked at again: a duplicate now, or the
 * next in line. Numbers beyond the next one expected, or a count beyond the numbers carried, owe a
 * catch-up from before them. Numbers at or below the count seen are not applied (an older version
 * must not overwrite a newer one): the last one again is a retry; older ones are a late copy or a
 * server whose count started again, and owe a catch-up, which reads the resources as they are now.
 */
async function applyEvents(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig & { subscription: SubscriptionConfig },
  n: Notification,
): Promise<Omit<NotifyReceipt, 'type'>> {
  const numbers = n.eventNumbers.length > 0 ? n.eventNumbers : n.eventsSinceStart !== undefined ? [n.eventsSinceStart] : []
  let [lowest, highest] = [Number.POSITIVE_INFINITY, 0]
  for (const k of numbers) [lowest, highest] = [Math.min(lowest, k), Math.max(highest, k)]
  // The server counted events beyond those carried: they come in other notifications, or never.
  const countedBeyond = n.eventsSinceStart !== undefined && n.eventsSinceStart > highest
  let records: SourceRecord[] | undefined
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const row = await subscriptionOf(ctx, source.id)
    if (!row) throw refused()
    const seen = row.eventsSinceStart
    if (numbers.length > 0 && highest <= seen) {
      const stale = highest < seen
      if (stale) await owe(ctx, source.id, row.caughtUpAt, { lastNotificationAt: isoNow(ctx.clock) })
      else {
        await ctx.db
          .update(fhirSourceSubscriptions)
          .set({ lastNotificationAt: isoNow(ctx.clock) })
          .where(eq(fhirSourceSubscriptions.dataSourceId, source.id))
      }
      return { applied: 0, duplicate: true, catchUp: stale }
    }
    const gap = numbers.length === 0 || lowest > seen + 1 || countedBeyond
    let fetchFailed = false
    if (!records) {
      try {
        records = await recordsOf(ctx, source, config, n)
      } catch (err) {
        // What could not be read is searched for by the catch-up.
        if (!(err instanceof ConnectorError)) throw err
        ctx.log.warn('fhir notification: a resource could not be read', { dataSourceId: source.id, error: err.message })
        records = []
        fetchFailed = true
      }
    }
    const owes = gap || fetchFailed
    const claim = crypto.randomUUID()
    const now = isoNow(ctx.clock)
    const caughtUpTo = fetchFailed ? undefined : watermark(n, records, ctx.clock.now())
    const claimStatements = claimOnCounter({ sourceId: source.id, seen, highest, claim, now, owes, caughtUpTo })
    try {
      if (records.length > 0) {
        await applyPushed(ctx, source.id, {
          records,
          keyField: config.keyField,
          trigger: 'subscription',
          with: () => claimStatements,
          lostRace: async () => (await subscriptionOf(ctx, source.id))?.lastClaim !== claim,
        })
      } else {
        await runBatch(ctx.db, claimStatements)
      }
      return { applied: records.length, duplicate: false, catchUp: owes }
    } catch (err) {
      if (isConflict(err) && attempt < CLAIM_ATTEMPTS - 1) {
        // Another write holds the source (most often the previous notification's): a moment later.
        await new Promise((resolve) => setTimeout(resolve, 20 * (attempt + 1)))
        continue
      }
      if (isConflict(err)) {
        // A sync holds the source. A removal cannot wait for the catch-up (a search lists no deleted
        // resource): the notification is refused, its count not taken, so the server sends it again.
        if (records.some((r) => r.deleted)) throw busy()
        // Else the counter moves, and the catch-up after it brings these changes.
        await owe(ctx, source.id, row.caughtUpAt, {})
        await ctx.db
          .update(fhirSourceSubscriptions)
          .set({ eventsSinceStart: sql`max(events_since_start, ${highest})`, lastNotificationAt: now } as never)
          .where(eq(fhirSourceSubscriptions.dataSourceId, source.id))
        return { applied: 0, duplicate: false, catchUp: true }
      }
      if ((await subscriptionOf(ctx, source.id))?.lastClaim !== claim) continue
      throw err
    }
  }
  throw new AppError('CONFLICT', 'The notification could not be claimed: other notifications of this source keep arriving')
}

/**
 * How far a notification applied in order brings the catch-up point: the latest server time it
 * carries (its events' `timestamp`s, its resources' `meta.lastUpdated`), never later than our own
 * clock, less the margin (catch-up.ts). Every change the server made before the events it carries
 * has reached us by then, however late it was delivered; a change after them is searched for from
 * there. Undefined when it carries no time (the point stays where it was).
 */
function watermark(n: Notification, records: readonly SourceRecord[], now: Date): string | undefined {
  let latest = ''
  for (const t of n.eventTimes) if (t > latest) latest = t
  for (const r of records) {
    const t = r.deleted ? undefined : instantOf((r.data.meta as { lastUpdated?: unknown } | undefined)?.lastUpdated)
    if (t && t > latest) latest = t
  }
  if (latest === '') return undefined
  return new Date(Math.min(Date.parse(latest), now.getTime()) - CATCH_UP_MARGIN_MS).toISOString()
}

/** What a notification's claim on the event counter is made of. */
export interface Claim {
  sourceId: number
  /** The counter as read. */
  seen: number
  /** The notification's highest event number. */
  highest: number
  /** A random id of this claim. */
  claim: string
  now: string
  /** A catch-up is owed (a gap, a resource that could not be read). */
  owes: boolean
  /** The catch-up point the notification brings (`watermark`); undefined leaves it. */
  caughtUpTo?: string
}

/**
 * The claim's two statements, to commit in the batch of the notification's rows: the counter moved
 * from `seen` (never backwards), the claim's id, the times, the status made active, a catch-up owed
 * from the catch-up point as it was, the point moved on (never backwards); then the guard, which fails the whole batch (json() of a text that
 * is not JSON raises) when the counter was not at `seen`, that is when another instance claimed
 * first.
 */
export function claimOnCounter(c: Claim): SQL[] {
  return [
    sql`UPDATE fhir_source_subscriptions SET events_since_start = max(events_since_start, ${c.highest}),
        last_claim = ${c.claim}, last_notification_at = ${c.now}, updated_at = ${c.now},
        status = CASE WHEN status = 'requested' THEN 'active' ELSE status END,
        catch_up_from = ${c.owes ? sql`coalesce(catch_up_from, caught_up_at)` : sql`catch_up_from`},
        caught_up_at = ${c.caughtUpTo === undefined ? sql`caught_up_at` : sql`max(caught_up_at, ${c.caughtUpTo})`}
      WHERE data_source_id = ${c.sourceId} AND events_since_start = ${c.seen}`,
    sql`SELECT json('claim lost') FROM fhir_source_subscriptions
      WHERE data_source_id = ${c.sourceId} AND (last_claim IS NULL OR last_claim <> ${c.claim})`,
  ]
}

/**
 * The records of a notification's entries of the source's resource types, the last entry of a key
 * winning: a full resource as it came, an id-only entry read from the server with the source's
 * authentication (a 404 or 410 is a removal), a DELETE a removal. More id-only entries than
 * `MAX_ID_ONLY_READS` are not read here: the catch-up reads them (a ConnectorError).
 */
async function recordsOf(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig,
  n: Notification,
): Promise<SourceRecord[]> {
  const types = sourceTypes(config)
  const byKey = new Map<string, NotifiedEntry>()
  for (const e of n.entries) {
    if (!types.has(e.type)) continue
    byKey.delete(e.key)
    byKey.set(e.key, e)
  }
  const entries = [...byKey.values()]
  const reads = entries.filter((e) => !e.deleted && !e.resource).length
  if (reads > MAX_ID_ONLY_READS) {
    throw new ConnectorError(`The notification names ${reads} resources to read (at most ${MAX_ID_ONLY_READS} are read at once)`)
  }
  const gone = { statuses: new Set([404, 410]) }
  const client = fhirClient(ctx, source, config, (res) => (gone.statuses.has(res.status) ? GONE : undefined))
  const out: SourceRecord[] = []
  for (const e of entries) {
    if (e.deleted) {
      out.push(removal(e.type, e.id))
      continue
    }
    if (e.resource) {
      out.push({ key: e.key, data: e.resource })
      continue
    }
    const url = `${baseOf(config)}/${e.type}/${encodeURIComponent(e.id)}`
    try {
      const res = await client.send(url, { method: 'GET', headers: { Accept: 'application/fhir+json' } })
      const resource = JSON.parse(new TextDecoder().decode(await client.readBody(res))) as Record<string, unknown>
      if (resource?.resourceType !== e.type || resource.id !== e.id) {
        throw new ConnectorError(`The FHIR server did not answer ${e.key} with that ${e.type}`)
      }
      out.push({ key: e.key, data: resource })
    } catch (err) {
      if (err instanceof ConnectorError && err.message === GONE) out.push(removal(e.type, e.id))
      else throw client.failure(err, e.key)
    }
  }
  return out
}

/**
 * A classic notification's own change: the resource it carries (of the source's types, with a
 * valid id, matching the address it was sent to), or the removal a `DELETE {endpoint}/{type}/{id}`
 * addresses, written through the push path. Answers how many records were written: none for an
 * empty ping, a body that is no such resource, or while a sync holds the source (the catch-up
 * brings it then).
 */
async function applyClassic(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig,
  text: string,
  addressed: Addressed | undefined,
): Promise<number> {
  const types = sourceTypes(config)
  let record: SourceRecord | undefined
  if (addressed?.method === 'DELETE') {
    if (types.has(addressed.type) && isFhirId(addressed.id)) record = removal(addressed.type, addressed.id)
  } else if (text.startsWith('{')) {
    let doc: Record<string, unknown> | undefined
    try {
      doc = JSON.parse(text) as Record<string, unknown>
    } catch {
      doc = undefined
    }
    const type = doc?.resourceType
    const fits =
      doc &&
      typeof type === 'string' &&
      types.has(type) &&
      isFhirId(doc.id) &&
      (!addressed || (addressed.type === type && addressed.id === doc.id))
    if (fits && doc) record = { key: `${type}/${doc.id}`, data: doc }
  }
  if (!record) return 0
  for (let attempt = 0; ; attempt++) {
    try {
      await applyPushed(ctx, source.id, { records: [record], keyField: config.keyField, trigger: 'subscription' })
      return 1
    } catch (err) {
      if (!isConflict(err)) throw err
      if (attempt < CLAIM_ATTEMPTS - 1) await new Promise((resolve) => setTimeout(resolve, 20 * (attempt + 1)))
      // A resource comes with the catch-up; a removal does not (a search lists no deleted resource).
      else if (record.deleted) throw busy()
      else return 0
    }
  }
}

/** 503 for a removal that meets a running sync: nothing was done, the sender is to send it again. */
function busy(): AppError {
  const err = new AppError('SERVICE_UNAVAILABLE', 'A sync of the source is running; the removal was not applied: send it again')
  err.headers['Retry-After'] = '5'
  return err
}

const sourceTypes = (config: FhirConfig) => new Set(config.resourceTypes ?? (config.resourceType ? [config.resourceType] : []))

/** The removal of `type/id`: its data names the resource, so a `keyField` of `id` keys it as the resource did. */
const removal = (type: string, id: string): SourceRecord => ({
  key: `${type}/${id}`,
  data: { resourceType: type, id },
  deleted: true,
})

const GONE = 'gone'
