import { eq, type SQL, sql } from 'drizzle-orm'
import { type FhirConfig, searchedTypes } from '../../connectors/fhir.ts'
import type { Notification, NotifiedEntry, SubscriptionConfig } from '../../connectors/fhir-subscription-config.ts'
import { ConnectorError, type SourceRecord } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { runBatch } from '../../db/client.ts'
import { fhirSourceSubscriptions } from '../../db/schema.ts'
import { AppError, isConflict } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { CATCH_UP_MARGIN_MS, owe } from './datasources.fhir-catch-up.ts'
import { refused } from './datasources.fhir-notify-sender.ts'
import { subscriptionOf } from './datasources.fhir-subscription.ts'
import { baseOf, fhirClient } from './datasources.fhir-upstream.ts'
import type { DataSourceRow } from './datasources.schemas.ts'
import { applyPushed } from './datasources.webhooks.ts'

/**
 * A topic-based event notification applied (datasources.fhir-notify.ts receives it): its changes
 * read, written through the push path with a claim on the event counter in the same batch, and
 * the catch-up point moved on. What decides a duplicate, a gap or a catch-up is here.
 */

/** Tries of a notification's claim against other writes of the source. */
export const CLAIM_ATTEMPTS = 5

/** The most id-only entries one notification reads from the server; past it, the catch-up reads them. */
export const MAX_ID_ONLY_READS = 100

/** What applying a notification did. */
export interface Applied {
  applied: number
  duplicate: boolean
  catchUp: boolean
}

/**
 * An event notification: its changes, read (id-only entries fetched), then written through the
 * push path in one batch with the claim on the counter. The claim moves `events_since_start` from
 * the value read to the notification's highest number; when another instance moved it first the
 * batch fails whole (the guard) and the notification is looked at again: a duplicate now, or the
 * next in line. Numbers beyond the next one expected, or a count beyond the numbers carried, owe a
 * catch-up from before them, and so does a resource that could not be read (the removals and the
 * resources that came are applied all the same). Numbers at or below the count seen are not
 * applied as sent (an older version must not overwrite a newer one): the last one again is a
 * retry; older ones are a late copy or a server whose count started again: their entries are read
 * again as the server holds them now (a removal confirmed by its 404 or 410), applied without
 * taking the count, and a catch-up is owed.
 */
export async function applyEvents(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig & { subscription: SubscriptionConfig },
  n: Notification,
): Promise<Applied> {
  const numbers = n.eventNumbers.length > 0 ? n.eventNumbers : n.eventsSinceStart !== undefined ? [n.eventsSinceStart] : []
  let [lowest, highest] = [Number.POSITIVE_INFINITY, 0]
  for (const k of numbers) [lowest, highest] = [Math.min(lowest, k), Math.max(highest, k)]
  // The server counted events beyond those carried: they come in other notifications, or never.
  const countedBeyond = n.eventsSinceStart !== undefined && n.eventsSinceStart > highest
  let read: Read | undefined
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const row = await subscriptionOf(ctx, source.id)
    if (!row) throw refused()
    const seen = row.eventsSinceStart
    if (numbers.length > 0 && highest <= seen) {
      if (highest < seen) return applyStale(ctx, source, config, n, row.caughtUpAt)
      await ctx.db
        .update(fhirSourceSubscriptions)
        .set({ lastNotificationAt: isoNow(ctx.clock) })
        .where(eq(fhirSourceSubscriptions.dataSourceId, source.id))
      return { applied: 0, duplicate: true, catchUp: false }
    }
    const gap = numbers.length === 0 || lowest > seen + 1 || countedBeyond
    read ??= await recordsOf(ctx, source, config, n)
    const { records } = read
    const owes = gap || read.unread > 0
    const claim = crypto.randomUUID()
    const now = isoNow(ctx.clock)
    const caughtUpTo = watermark(n, ctx.clock.now())
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

// --- Internal helpers ---

/**
 * A late copy, or an event of a server that counts again (numbers below the count seen): its
 * entries' resources as the server holds them now, each read again (a 404 or 410 a removal), are
 * applied without a claim on the counter (reading the present twice applies it twice, which moves
 * nothing), and a catch-up is owed for what may have been missed meanwhile. A removal that meets
 * a running sync is a 503, as for any notification.
 */
async function applyStale(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig,
  n: Notification,
  caughtUpAt: string,
): Promise<Applied> {
  const { records } = await recordsOf(ctx, source, config, n, { again: true })
  let applied = 0
  if (records.length > 0) {
    try {
      await applyPushed(ctx, source.id, { records, keyField: config.keyField, trigger: 'subscription' })
      applied = records.length
    } catch (err) {
      if (!isConflict(err)) throw err
      if (records.some((r) => r.deleted)) throw busy()
    }
  }
  await owe(ctx, source.id, caughtUpAt, { lastNotificationAt: isoNow(ctx.clock) })
  return { applied, duplicate: true, catchUp: true }
}

/**
 * How far a notification applied in order brings the catch-up point: the latest of its events'
 * `timestamp`s (the server's clock), never later than our own clock, less the margin
 * (catch-up.ts). Every change the server made before the events it carries has reached us by then,
 * however late it was delivered; a change after them is searched for from there. Only the events'
 * own times count: a resource read now (id-only) or carried in its present version may be newer
 * than changes whose notifications are lost. Undefined when it carries no time (the point stays).
 */
function watermark(n: Notification, now: Date): string | undefined {
  let latest = ''
  for (const t of n.eventTimes) if (t > latest) latest = t
  if (latest === '') return undefined
  return new Date(Math.min(Date.parse(latest), now.getTime()) - CATCH_UP_MARGIN_MS).toISOString()
}

/** A notification's records, and how many of its resources could not be read (the catch-up reads them). */
interface Read {
  records: SourceRecord[]
  unread: number
}

/**
 * The records of a notification's entries of the source's resource types, the last entry of a key
 * winning: a full resource as it came, an id-only entry read from the server with the source's
 * authentication (a 404 or 410 is a removal), a DELETE a removal; with `again`, every entry read
 * as the server holds it now. A resource that cannot be read, and every one to read past
 * `MAX_ID_ONLY_READS`, is left out and counted as unread: the rest are applied all the same.
 */
async function recordsOf(
  ctx: ServiceContext,
  source: DataSourceRow,
  config: FhirConfig,
  n: Notification,
  { again = false } = {},
): Promise<Read> {
  const types = searchedTypes(config)
  const byKey = new Map<string, NotifiedEntry>()
  for (const e of n.entries) {
    if (!types.has(e.type)) continue
    byKey.delete(e.key)
    byKey.set(e.key, e)
  }
  const entries = [...byKey.values()]
  const toRead = entries.filter((e) => again || (!e.deleted && !e.resource))
  const out: SourceRecord[] = again ? [] : entries.filter((e) => e.deleted || e.resource).map(recordOf)
  if (toRead.length > MAX_ID_ONLY_READS) {
    ctx.log.warn('fhir notification: too many resources to read, left to the catch-up', {
      dataSourceId: source.id,
      count: toRead.length,
    })
    return { records: out, unread: toRead.length }
  }
  const gone = { statuses: new Set([404, 410]) }
  const client = fhirClient(ctx, source, config, (res) => (gone.statuses.has(res.status) ? GONE : undefined))
  let unread = 0
  for (const e of toRead) {
    const url = `${baseOf(config)}/${e.type}/${encodeURIComponent(e.id)}`
    try {
      const res = await client.send(url, { method: 'GET', headers: { Accept: 'application/fhir+json' } })
      const resource = JSON.parse(new TextDecoder().decode(await client.readBody(res))) as Record<string, unknown>
      if (resource?.resourceType !== e.type || resource.id !== e.id) {
        throw new ConnectorError(`The FHIR server did not answer ${e.key} with that ${e.type}`)
      }
      out.push({ key: e.key, data: resource })
    } catch (err) {
      if (err instanceof ConnectorError && err.message === GONE) {
        out.push(removal(e.type, e.id))
        continue
      }
      const failure = client.failure(err, e.key)
      ctx.log.warn('fhir notification: a resource could not be read', { dataSourceId: source.id, error: failure.message })
      unread++
    }
  }
  return { records: out, unread }
}

/** The record of an entry that needs no read: its removal, or the resource it carries. */
const recordOf = (e: NotifiedEntry): SourceRecord =>
  e.deleted ? removal(e.type, e.id) : { key: e.key, data: e.resource as Record<string, unknown> }

/** 503 for a removal that meets a running sync: nothing was done, the sender is to send it again. */
export function busy(): AppError {
  const err = new AppError('SERVICE_UNAVAILABLE', 'A sync of the source is running; the removal was not applied: send it again')
  err.headers['Retry-After'] = '5'
  return err
}

/** The removal of `type/id`: its data names the resource, so a `keyField` of `id` keys it as the resource did. */
export const removal = (type: string, id: string): SourceRecord => ({
  key: `${type}/${id}`,
  data: { resourceType: type, id },
  deleted: true,
})

const GONE = 'gone'
