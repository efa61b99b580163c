import { sql } from 'drizzle-orm'
import type { ServiceDeps } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import type { FhirSubscriptionStatus, fhirTopicSubscriptions } from '../../db/schema-live.ts'
import { type NotificationType, notificationBundle, type StatusFacts, type TopicEvent } from './fhir.notification.ts'
import { patientOfRow } from './fhir.patient.ts'
import { baseOfTopic, FHIR_JSON_TYPE, type MembershipEvent, splitHeader } from './fhir.topic.ts'

/**
 * What a topic's delivery reads of the webhook queue's rows (subscriptions.schemas.ts: its rows
 * fit these): the queue calls this module for subscriptions of kind `fhir-topic`, and this module
 * does not import the queue's.
 */
export interface QueuedSubscription {
  id: number
  viewId: number | null
}
export interface QueuedDelivery {
  id: number
  deliveryId: string
  eventSeq: number | null
  eventType: string
  payload: string | null
}
/** The scope of an event, as the queue's read check takes it (subscriptions.access.ts `EventScope`). */
export interface EventScope {
  type: string
  panelId: number | null
  viewId: number | null
}

/**
 * What the outbound webhook queue (subscriptions.queue.ts) asks of a `fhir-topic` subscription
 * (docs/fhir.md "Delivery"): the body of a delivery, as a backport notification Bundle, and what an
 * attempt's outcome does to the Subscription's status. The queue keeps everything else: order,
 * leases, retries, signing and the network guard.
 */

/** A delivery's event types beside the log's: the handshake after create, and the heartbeats. */
export const HANDSHAKE = 'fhir.handshake'
export const HEARTBEAT = 'fhir.heartbeat'

export interface FhirDelivery {
  body: string
  eventId: string
  contentType: string
  headers: Record<string, string>
  /** The subscription's timeout extension, in ms. */
  timeoutMs?: number
  /** A success changes nothing of the subscription (afterFhirAttempt may skip it). */
  quiet: boolean
}

export type FhirDeliveryResult = FhirDelivery | { pass: 'failed' | 'skipped'; error: string }

/** What a delivery reads of a subscription's FHIR side. */
type FhirRow = Pick<
  typeof fhirTopicSubscriptions.$inferSelect,
  | 'subscriptionId'
  | 'tenantId'
  | 'status'
  | 'payload'
  | 'topic'
  | 'heartbeatSeconds'
  | 'timeoutSeconds'
  | 'headers'
  | 'eventCount'
  | 'error'
>

/** The notification a head delivery of a `fhir-topic` subscription sends, or why it is passed over. */
export async function fhirDeliveryOf(
  deps: ServiceDeps,
  sub: QueuedSubscription,
  head: QueuedDelivery,
  readable: (e: EventScope) => Promise<boolean>,
  now: string,
): Promise<FhirDeliveryResult> {
  const found = await readDelivery(deps, sub, head)
  if (!found) return { pass: 'failed', error: 'The FHIR side of the subscription is missing' }
  const { fhir, event } = found
  const facts = (type: NotificationType, status: FhirSubscriptionStatus, eventsSinceStart: number): StatusFacts => ({
    base: baseOfTopic(fhir.topic),
    subscriptionId: sub.id,
    topic: fhir.topic,
    status,
    type,
    eventsSinceStart,
    events: [],
  })
  let bundle: ReturnType<typeof notificationBundle>
  let eventId: string
  if (head.eventType === HANDSHAKE || head.eventType === HEARTBEAT) {
    const type = head.eventType === HANDSHAKE ? 'handshake' : 'heartbeat'
    const count = type === 'handshake' ? 0 : await sentBefore(deps, fhir, head)
    bundle = notificationBundle(facts(type, fhir.status, count), fhir.payload, now)
    eventId = String((JSON.parse(head.payload ?? '{}') as { id?: unknown }).id ?? head.deliveryId)
  } else if (head.eventType === 'view.deleted') {
    const f = { ...facts('event-notification', 'error' as const, fhir.eventCount), error: viewDeletedError(sub.viewId) }
    bundle = notificationBundle(f, fhir.payload, now)
    eventId = `view-deleted-${sub.viewId}`
  } else {
    if (!event) return { pass: 'failed', error: `Event ${head.eventSeq} is no longer retained (events retention)` }
    if (event.number === null) return { pass: 'failed', error: `Event ${head.eventSeq} has no event number` }
    const scope = { type: event.type, panelId: event.panelId, viewId: event.viewId }
    if (!(await readable(scope))) return { pass: 'skipped', error: 'The owner may no longer read this event' }
    const topicEvent = toTopicEvent(event.number, event, event.patientColumn)
    bundle = notificationBundle(
      { ...facts('event-notification', fhir.status, event.number), events: [topicEvent] },
      fhir.payload,
      now,
    )
    eventId = String(event.number)
  }
  const headers = await headersOf(deps, fhir)
  if (!headers) return { pass: 'failed', error: 'channel.header cannot be decrypted (was ENCRYPTION_KEY changed?)' }
  const timeoutMs = fhir.timeoutSeconds === null ? undefined : fhir.timeoutSeconds * 1000
  // An active subscription without heartbeats has nothing to record after a success.
  const quiet = fhir.status === 'active' && fhir.heartbeatSeconds === null
  return { body: JSON.stringify(bundle), eventId, contentType: FHIR_JSON_TYPE, headers, timeoutMs, quiet }
}

export const viewDeletedError = (viewId: number | null) => `The view (Group/${viewId}) was deleted: the subscription has ended`

/**
 * After an attempt: a delivered notification makes the Subscription `active` (the handshake's
 * success included); a failed one `error`, with the reason. The view's deletion notice ends it:
 * once sent (or given up), the subscription stops (`active` 0) and stays `error`.
 */
export async function afterFhirAttempt(
  deps: ServiceDeps,
  sub: QueuedSubscription,
  head: QueuedDelivery,
  outcome: { ok: boolean; error: string | null; final: boolean; quiet: boolean },
  now: string,
): Promise<void> {
  if (outcome.ok && outcome.quiet && head.eventType !== 'view.deleted') return
  if (head.eventType === 'view.deleted') {
    const error = viewDeletedError(sub.viewId)
    await deps.db.batch([
      deps.db.run(sql`UPDATE fhir_topic_subscriptions SET status = 'error', error = ${error}, updated_at = ${now}
        WHERE subscription_id = ${sub.id}`),
      deps.db.run(sql`UPDATE subscriptions SET active = CASE WHEN ${outcome.ok || outcome.final} THEN 0 ELSE active END,
        disabled_reason = ${error}, updated_at = ${now} WHERE id = ${sub.id}`),
    ])
    return
  }
  if (outcome.ok) {
    await deps.db.run(sql`UPDATE fhir_topic_subscriptions SET status = 'active', error = NULL, last_sent_at = ${now},
      updated_at = CASE WHEN status = 'active' THEN updated_at ELSE ${now} END
      WHERE subscription_id = ${sub.id} AND status <> 'off'`)
  } else {
    const error = `The ${head.eventType === HANDSHAKE ? 'handshake' : 'notification'} could not be delivered: ${outcome.error ?? 'failed'}`
    await deps.db.run(sql`UPDATE fhir_topic_subscriptions SET status = 'error', error = ${error}, updated_at = ${now}
      WHERE subscription_id = ${sub.id} AND status <> 'off'`)
  }
}

/**
 * Queues a heartbeat for each active `fhir-topic` subscription with a heartbeat period that has sent
 * nothing for that long, has nothing pending and has taken in the whole log (one statement: several
 * instances never queue two). Returns how many were queued.
 */
export async function queueFhirHeartbeats(deps: ServiceDeps, now: Date): Promise<number> {
  const at = now.toISOString()
  const uuid = sql.raw(
    "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))",
  )
  const result = await deps.db.run(sql`
    INSERT INTO subscription_deliveries (tenant_id, subscription_id, delivery_id, event_seq, event_type, payload, status,
      attempts, next_attempt_at, created_at, updated_at)
    SELECT f.tenant_id, f.subscription_id, ${uuid}, NULL, ${HEARTBEAT}, json_object('id', 'heartbeat-' || f.subscription_id || '-' || ${at}),
      'pending', 0, ${at}, ${at}, ${at}
    FROM fhir_topic_subscriptions f JOIN subscriptions s ON s.id = f.subscription_id
    WHERE s.active = 1 AND f.status = 'active' AND f.heartbeat_seconds IS NOT NULL
      AND f.last_sent_at <= strftime('%Y-%m-%dT%H:%M:%fZ', ${at}, '-' || f.heartbeat_seconds || ' seconds')
      AND s.cursor_seq >= ifnull((SELECT last_seq FROM event_sequences q WHERE q.tenant_id = s.tenant_id), 0)
      AND NOT EXISTS (SELECT 1 FROM subscription_deliveries d WHERE d.subscription_id = f.subscription_id AND d.status = 'pending')`)
  return rowsAffected(result)
}

// --- Internal helpers ---

interface LoggedTopicEvent {
  number: number | null
  type: string
  occurredAt: string
  panelId: number | null
  viewId: number | null
  data: string
  patientColumn: string | null
}

/**
 * One read for a head delivery: the subscription's FHIR side and, for a log event, the event with
 * its number and the panel's patient column.
 */
async function readDelivery(
  deps: ServiceDeps,
  sub: QueuedSubscription,
  head: QueuedDelivery,
): Promise<{ fhir: FhirRow; event?: LoggedTopicEvent } | undefined> {
  const seq = head.eventSeq ?? -1
  const [row] = await deps.db.all<Record<string, unknown>>(sql`
    SELECT f.subscription_id, f.tenant_id, f.status, f.payload, f.topic, f.heartbeat_seconds, f.timeout_seconds, f.headers,
      f.event_count, f.error, e.seq, e.type, e.occurred_at, e.panel_id, e.view_id, e.data,
      (SELECT event_number FROM fhir_topic_events t WHERE t.subscription_id = f.subscription_id AND t.event_seq = ${seq}) AS number,
      (SELECT p.workflow ->> '$.patientReference' FROM panels p WHERE p.id = e.panel_id AND p.tenant_id = f.tenant_id) AS patient_column
    FROM fhir_topic_subscriptions f
    LEFT JOIN events e ON e.tenant_id = f.tenant_id AND e.seq = ${seq}
    WHERE f.subscription_id = ${sub.id}`)
  if (!row) return undefined
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v))
  const fhir: FhirRow = {
    subscriptionId: Number(row.subscription_id),
    tenantId: String(row.tenant_id),
    status: row.status as FhirSubscriptionStatus,
    payload: row.payload as FhirRow['payload'],
    topic: String(row.topic),
    heartbeatSeconds: n(row.heartbeat_seconds),
    timeoutSeconds: n(row.timeout_seconds),
    headers: (row.headers as string | null) ?? null,
    eventCount: Number(row.event_count),
    error: (row.error as string | null) ?? null,
  }
  if (row.seq === null || row.seq === undefined) return { fhir }
  return {
    fhir,
    event: {
      number: n(row.number),
      type: String(row.type),
      occurredAt: String(row.occurred_at),
      panelId: n(row.panel_id),
      viewId: n(row.view_id),
      data: String(row.data),
      patientColumn: (row.patient_column as string | null) ?? null,
    },
  }
}

/** A logged row event as a topic event: its patient from the panel's workflow column or its key. */
export function toTopicEvent(
  number: number,
  event: { type: string; occurredAt: string; viewId?: number | null; data: string | object },
  patientColumn: string | null,
): TopicEvent {
  const data = (typeof event.data === 'string' ? JSON.parse(event.data) : event.data) as {
    key: string
    row: Record<string, unknown> | null
  }
  return {
    number,
    timestamp: event.occurredAt,
    viewId: Number(event.viewId),
    kind: event.type.slice('row.'.length) as MembershipEvent,
    key: data.key,
    row: data.row ?? null,
    focus: patientOfRow(data.key, patientColumn !== null, data.row?.[patientColumn ?? ''] ?? null) ?? null,
  }
}

/** `events-since-subscription-start` as of a heartbeat: the last number queued before it. */
async function sentBefore(deps: ServiceDeps, fhir: FhirRow, head: QueuedDelivery): Promise<number> {
  const [row] = await deps.db.all<{ n: number | null }>(sql`
    SELECT max(e.event_number) AS n FROM fhir_topic_events e
    JOIN subscription_deliveries d ON d.subscription_id = e.subscription_id AND d.event_seq = e.event_seq
    WHERE e.subscription_id = ${fhir.subscriptionId} AND d.id < ${head.id}`)
  return row?.n == null ? fhir.eventCount : Number(row.n)
}

/** channel.header as request headers; undefined when they cannot be decrypted. */
async function headersOf(deps: ServiceDeps, fhir: FhirRow): Promise<Record<string, string> | undefined> {
  if (!fhir.headers) return {}
  let list: string[]
  try {
    list = JSON.parse(await deps.secrets.decrypt(fhir.headers)) as string[]
  } catch {
    return undefined
  }
  const out: Record<string, string> = {}
  for (const h of list) {
    const parsed = splitHeader(h)
    if (parsed) out[parsed[0]] = parsed[1]
  }
  return out
}
