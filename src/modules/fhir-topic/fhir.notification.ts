import type { FhirPayloadContent, FhirSubscriptionStatus } from '../../db/schema-live.ts'
import { BACKPORT, MEMBERSHIP_EVENT_SYSTEM, type MembershipEvent } from './fhir.topic.ts'

/**
 * The backport IG's notification shapes (docs/fhir.md "Notifications"): the SubscriptionStatus
 * `Parameters` (R4 profile backport-subscription-status-r4) and the `history` Bundle that carries it
 * first (backport-subscription-notification-r4). Pure: the caller gives every fact.
 */

export type NotificationType = 'handshake' | 'heartbeat' | 'event-notification' | 'query-status' | 'query-event'

/** One membership move of a view, numbered for one subscription. */
export interface TopicEvent {
  number: number
  timestamp: string
  viewId: number
  kind: MembershipEvent
  key: string
  /** The row as the view showed it (for `left`, as it was). */
  row: Record<string, unknown> | null
  /** The row's patient (fhir.patient.ts), or null. */
  focus: string | null
}

export interface StatusFacts {
  /** The face's base, `…/fhir`. */
  base: string
  subscriptionId: number
  topic: string
  status: FhirSubscriptionStatus
  type: NotificationType
  eventsSinceStart: number
  events: TopicEvent[]
  /** Why the status is `error`. */
  error?: string | null
}

type Param = Record<string, unknown> & { name: string }

const subscriptionUrl = (f: StatusFacts) => `${f.base}/Subscription/${f.subscriptionId}`

/** The SubscriptionStatus `Parameters`. Counts and event numbers are strings (R4 has no integer64). */
export function subscriptionStatus(f: StatusFacts) {
  const parameter: Param[] = [
    { name: 'subscription', valueReference: { reference: subscriptionUrl(f) } },
    { name: 'topic', valueCanonical: f.topic },
    { name: 'status', valueCode: f.status },
    { name: 'type', valueCode: f.type },
    { name: 'events-since-subscription-start', valueString: String(f.eventsSinceStart) },
  ]
  for (const e of f.events) {
    const part: Param[] = [
      { name: 'event-number', valueString: String(e.number) },
      { name: 'timestamp', valueInstant: e.timestamp },
    ]
    if (e.focus) part.push({ name: 'focus', valueReference: { reference: e.focus } })
    part.push({ name: 'additional-context', valueReference: { reference: `Group/${e.viewId}` } })
    part.push({
      name: 'additional-context',
      valueReference: { identifier: { system: MEMBERSHIP_EVENT_SYSTEM, value: e.kind }, display: `row.${e.kind}` },
    })
    // A row without a patient is still named, by its key, never dropped silently.
    if (!e.focus) part.push({ name: 'additional-context', valueReference: { identifier: { value: e.key }, display: 'row key' } })
    parameter.push({ name: 'notification-event', part })
  }
  if (f.error) parameter.push({ name: 'error', valueCodeableConcept: { text: f.error } })
  return { resourceType: 'Parameters', meta: { profile: [BACKPORT.statusProfile] }, parameter }
}

/**
 * The notification `history` Bundle: the SubscriptionStatus first, then per event its focus as the
 * payload content asks: nothing (`empty`), the focus's URL (`id-only`), or the row as `Parameters`
 * (`full-resource`, rowResource). History entries carry `request` and `response` (R4 bdl-3, bdl-4).
 */
export function notificationBundle(f: StatusFacts, payload: FhirPayloadContent, at: string) {
  const entry: Record<string, unknown>[] = [
    {
      fullUrl: `urn:uuid:${crypto.randomUUID()}`,
      resource: subscriptionStatus(f),
      request: { method: 'GET', url: `${subscriptionUrl(f)}/$status` },
      response: { status: '200' },
    },
  ]
  if (payload !== 'empty') {
    for (const e of f.events) {
      if (payload === 'id-only') {
        if (!e.focus) continue
        entry.push({
          fullUrl: absolute(f.base, e.focus),
          request: { method: 'GET', url: e.focus },
          response: { status: '200' },
        })
      } else {
        entry.push({
          fullUrl: `urn:uuid:${crypto.randomUUID()}`,
          resource: rowResource(e),
          request: { method: 'GET', url: e.focus ?? `Group/${e.viewId}` },
          response: { status: '200' },
        })
      }
    }
  }
  return {
    resourceType: 'Bundle',
    id: crypto.randomUUID(),
    meta: { profile: [BACKPORT.notificationProfile] },
    type: 'history',
    timestamp: at,
    entry,
  }
}

/** `$status`'s answer: a `searchset` of the one SubscriptionStatus. */
export function statusSearchset(f: StatusFacts) {
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    total: 1,
    entry: [{ fullUrl: `urn:uuid:${crypto.randomUUID()}`, resource: subscriptionStatus(f), search: { mode: 'match' } }],
  }
}

/**
 * A row as `full-resource` carries it: a `Parameters` with the row's key, patient, view, the move,
 * and one `column` per column of the row (`name`, then `value` as the matching FHIR type; one value
 * part per item of a list, none for a blank).
 */
export function rowResource(e: TopicEvent) {
  const parameter: Param[] = [{ name: 'key', valueString: e.key }]
  if (e.focus) parameter.push({ name: 'patient', valueReference: { reference: e.focus } })
  parameter.push({ name: 'group', valueReference: { reference: `Group/${e.viewId}` } })
  parameter.push({ name: 'event', valueCode: e.kind })
  for (const [column, value] of Object.entries(e.row ?? {})) {
    if (column === '_id') continue
    const values = Array.isArray(value) ? value : [value]
    const part: Param[] = [{ name: 'name', valueString: column }]
    for (const v of values) {
      const typed = fhirValue(v)
      if (typed) part.push({ name: 'value', ...typed })
    }
    parameter.push({ name: 'column', part })
  }
  return { resourceType: 'Parameters', parameter }
}

function fhirValue(v: unknown): Record<string, unknown> | undefined {
  if (v === null || v === undefined || v === '') return undefined
  if (typeof v === 'boolean') return { valueBoolean: v }
  if (typeof v === 'number') {
    return Number.isInteger(v) && Math.abs(v) <= 2_147_483_647 ? { valueInteger: v } : { valueDecimal: v }
  }
  if (typeof v === 'string') return { valueString: v }
  return { valueString: JSON.stringify(v) }
}

const absolute = (base: string, reference: string) => (/^https?:\/\//.test(reference) ? reference : `${base}/${reference}`)
