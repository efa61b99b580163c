import { and, eq, type SQL, sql } from 'drizzle-orm'
import type { FhirConfig } from '../../connectors/fhir.ts'
import {
  type Notification,
  NotificationError,
  readNotification,
  type SubscriptionConfig,
  switchedOn,
} from '../../connectors/fhir-subscription-config.ts'
import { ConnectorError, type SourceRecord } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { systemContext } from '../../context.ts'
import { runBatch } from '../../db/client.ts'
import { dataSources, fhirSourceSubscriptions } from '../../db/schema.ts'
import type { Deps } from '../../deps.ts'
import { AppError, invalid, isConflict, unauthorized } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { catchUp, owe, startCatchUp } from './datasources.fhir-catch-up.ts'
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

/**
 * Handles one notification; answers what it did. `authorization` is the request's Authorization
 * header (the channel header the Subscription was made with); `addressed`: the sender appended the
 * resource's address to the endpoint (a classic rest-hook with a payload).
 */
export async function receiveFhirNotification(
  deps: Deps,
  token: string,
  authorization: string | undefined,
  body: Uint8Array,
  options: { addressed?: boolean } = {},
): Promise<NotifyReceipt> {
  const { ctx, row, source, config } = await verified(deps, token, authorization)
  const text = new TextDecoder().decode(body).trim()
  const receipt: NotifyReceipt = { type: 'event-notification', applied: 0, duplicate: false, catchUp: false }
  const classic = config.subscription.criteria !== undefined
  if (options.addressed && !classic) {
    throw invalid([{ path: 'url', message: 'a topic-based Subscription notifies at the endpoint itself' }])
  }
  if (classic && (options.addressed || !isBundle(text))) {
    // Classic R4 criteria: an empty POST, or the resource itself, says "something changed": the
    // catch-up search finds what.
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

type Verified = {
  ctx: ServiceContext
  row: SubscriptionRow
  source: DataSourceRow
  config: FhirConfig & { subscription: SubscriptionConfig }
}

/**
 * The source of a token, after checking the token (found by its hash, then compared whole in
 * constant time) and the channel header (compared in constant time). Any failure is the same 401.
 * A source whose live feed is switched off answers 409 (after both checks) and nothing changes.
 */
async function verified(deps: Deps, token: string, authorization: string | undefined): Promise<Verified> {
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
 * next in line. Numbers beyond the next one expected owe a catch-up from before them.
 */
async function applyEvents(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig & { subscription: SubscriptionConfig },
  n: Notification,
): Promise<Omit<NotifyReceipt, 'type'>> {
  const numbers = n.eventNumbers.length > 0 ? n.eventNumbers : n.eventsSinceStart !== undefined ? [n.eventsSinceStart] : []
  const highest = Math.max(...numbers, n.eventsSinceStart ?? 0)
  const lowest = numbers.length > 0 ? Math.min(...numbers) : highest
  let records: SourceRecord[] | undefined
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const row = await subscriptionOf(ctx, source.id)
    if (!row) throw refused()
    const seen = row.eventsSinceStart
    if (numbers.length > 0 && highest <= seen) {
      await ctx.db
        .update(fhirSourceSubscriptions)
        .set({ lastNotificationAt: isoNow(ctx.clock) })
        .where(eq(fhirSourceSubscriptions.dataSourceId, source.id))
      return { applied: 0, duplicate: true, catchUp: false }
    }
    const gap = numbers.length === 0 || lowest > seen + 1
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
    const claimStatements = claimOnCounter({ sourceId: source.id, seen, highest, claim, now, owes })
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
        // A sync holds the source: the counter moves, and the catch-up after it brings these changes.
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
}

/**
 * The claim's two statements, to commit in the batch of the notification's rows: the counter moved
 * from `seen` (never backwards), the claim's id, the times, the status made active, a catch-up owed
 * from the last instant applied; then the guard, which fails the whole batch (json() of a text that
 * is not JSON raises) when the counter was not at `seen`, that is when another instance claimed
 * first.
 */
export function claimOnCounter(c: Claim): SQL[] {
  return [
    sql`UPDATE fhir_source_subscriptions SET events_since_start = max(events_since_start, ${c.highest}),
        last_claim = ${c.claim}, last_notification_at = ${c.now}, updated_at = ${c.now},
        status = CASE WHEN status = 'requested' THEN 'active' ELSE status END,
        catch_up_from = ${c.owes ? sql`coalesce(catch_up_from, caught_up_at)` : sql`catch_up_from`},
        caught_up_at = max(caught_up_at, ${c.now})
      WHERE data_source_id = ${c.sourceId} AND events_since_start = ${c.seen}`,
    sql`SELECT json('claim lost') FROM fhir_source_subscriptions
      WHERE data_source_id = ${c.sourceId} AND (last_claim IS NULL OR last_claim <> ${c.claim})`,
  ]
}

/**
 * The records of a notification's entries of the source's resource types: a full resource as it
 * came, an id-only entry read from the server with the source's authentication (a 404 or 410 is a
 * removal), a DELETE a removal.
 */
async function recordsOf(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig,
  n: Notification,
): Promise<SourceRecord[]> {
  const types = new Set(config.resourceTypes ?? (config.resourceType ? [config.resourceType] : []))
  const entries = n.entries.filter((e) => types.has(e.type))
  const gone = { statuses: new Set([404, 410]) }
  const client = fhirClient(ctx, source, config, (res) => (gone.statuses.has(res.status) ? GONE : undefined))
  const out: SourceRecord[] = []
  for (const e of entries) {
    if (e.deleted) {
      out.push({ key: e.key, data: {}, deleted: true })
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
      if (resource?.resourceType !== e.type) throw new ConnectorError(`The FHIR server did not answer ${e.key} with a ${e.type}`)
      out.push({ key: e.key, data: resource })
    } catch (err) {
      if (err instanceof ConnectorError && err.message === GONE) out.push({ key: e.key, data: {}, deleted: true })
      else throw client.failure(err, e.key)
    }
  }
  return out
}

const GONE = 'gone'
