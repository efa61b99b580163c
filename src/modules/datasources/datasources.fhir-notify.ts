import { eq, sql } from 'drizzle-orm'
import { type FhirConfig, searchedTypes } from '../../connectors/fhir.ts'
import { type Notification, NotificationError, readNotification } from '../../connectors/fhir-subscription-config.ts'
import { isFhirId } from '../../connectors/fhir-types.ts'
import type { SourceRecord } from '../../connectors/types.ts'
import type { ServiceContext } from '../../context.ts'
import { fhirSourceSubscriptions } from '../../db/schema.ts'
import { AppError, invalid, isConflict } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { catchUp, owe, startCatchUp } from './datasources.fhir-catch-up.ts'
import { checkUpstream } from './datasources.fhir-check.ts'
import { applyEvents, busy, CLAIM_ATTEMPTS, removal } from './datasources.fhir-notify-events.ts'
import type { Verified } from './datasources.fhir-notify-sender.ts'
import { subscriptionOf } from './datasources.fhir-subscription.ts'
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
 * in `fhir_source_subscriptions`. The sender's check is datasources.fhir-notify-sender.ts, an event
 * notification's application datasources.fhir-notify-events.ts; classic notifications are here.
 */

/** The largest notification read (413 beyond): a full-resource Bundle of a few resources. */
export const MAX_NOTIFICATION_BODY = 8 * 1024 * 1024

/** What a notification did. */
export interface NotifyReceipt {
  type: string
  applied: number
  duplicate: boolean
  catchUp: boolean
}

/** How a classic rest-hook sender addressed the endpoint: `{endpoint}/{type}/{id}` with its method. */
export interface Addressed {
  type: string
  id: string
  method: 'POST' | 'PUT' | 'DELETE'
}

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
  const types = searchedTypes(config)
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
