import { z } from 'zod'
import { instantOf, isFhirId, RESOURCE_TYPE } from './fhir-types.ts'

/**
 * A `fhir` source's live mode (docs/connectors-fhir.md "Subscription mode"): `config.subscription`,
 * the upstream `Subscription` it asks the FHIR server for (R4 Subscriptions Backport profile with a
 * topic, classic R4 criteria otherwise), and the shape of what the server sends back. Pure: the
 * service (datasources.fhir-subscription.ts) posts, deletes and receives.
 */

export const BACKPORT = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition'
export const BACKPORT_PROFILE = `${BACKPORT}/backport-subscription`
export const FILTER_CRITERIA = `${BACKPORT}/backport-filter-criteria`
export const PAYLOAD_CONTENT = `${BACKPORT}/backport-payload-content`
export const HEARTBEAT_PERIOD = `${BACKPORT}/backport-heartbeat-period`
export const DEFAULT_HEARTBEAT_SECONDS = 60
const FHIR_JSON = 'application/fhir+json'

const searchText = z.string().regex(/^[A-Z][A-Za-z]{1,63}(\?.*)?$/, 'must be a search such as "Observation?code=1234-5"')

/** `config.subscription` of a `fhir` source in search mode. */
export const SubscriptionConfig = z
  .object({
    /** The SubscriptionTopic canonical (backport profile). */
    topic: z
      .string()
      .max(2000)
      .refine(
        (v) => /^(?:https?:\/\/[^\s]+|urn:[a-z0-9][a-z0-9-]{0,31}:[^\s]+)$/i.test(v) && URL.canParse(v),
        'must be a canonical URL (http, https or urn)',
      )
      .optional(),
    /** Classic R4 criteria, a search such as `Observation?code=http://loinc.org|8867-4`. */
    criteria: searchText.max(2000).optional(),
    /** The topic's filters, each `Type?param=value` (backport `backport-filter-criteria`). */
    filters: z.array(searchText.max(2000)).min(1).max(20).optional(),
    payload: z.enum(['id-only', 'full-resource']),
    heartbeatSeconds: z.number().int().min(10).max(86_400).optional(),
    /**
     * The live feed's switch (true when absent): off, the upstream Subscription is deleted and the
     * notification URL refuses; on again, a new one is made and a catch-up brings what changed.
     */
    enabled: z.boolean().optional(),
  })
  .strict()
  .superRefine(
    (s, ctx) => {
      if (s.topic === undefined && s.criteria === undefined) {
        ctx.addIssue({ code: 'custom', path: ['topic'], message: 'required: a topic canonical, or classic criteria' })
      }
      if (s.topic !== undefined && s.criteria !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['criteria'], message: 'not with topic: give exactly one of topic and criteria' })
      }
      if (s.criteria !== undefined && s.filters !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['filters'], message: 'only with topic (classic criteria carry their own search)' })
      }
    },
    { when: ({ value }) => typeof value === 'object' && value !== null },
  )

export type SubscriptionConfig = z.infer<typeof SubscriptionConfig>

/** Whether the live feed is switched on: `enabled` is true or absent. */
export const switchedOn = (s: { enabled?: unknown }): boolean => s.enabled !== false

/**
 * What decides the upstream Subscription: a change of any of it replaces the Subscription. Not
 * `enabled`: switching the feed off and on is not a change of what the Subscription asks for.
 */
export function subscriptionSpec(baseUrl: string, s: SubscriptionConfig): string {
  return JSON.stringify([
    baseUrl.replace(/\/+$/, ''),
    s.topic ?? null,
    s.criteria ?? null,
    s.filters ?? [],
    s.payload,
    s.heartbeatSeconds ?? null,
  ])
}

/**
 * The Subscription to POST: the backport profile (`status: requested`, rest-hook, payload
 * `application/fhir+json` with its content code, the heartbeat period, the filters) for a topic,
 * a classic R4 Subscription for criteria (full-resource: the resource as payload; id-only: no
 * payload, an empty notification).
 */
export function subscriptionResource(
  s: SubscriptionConfig,
  endpoint: string,
  secret: string,
  reason: string,
): Record<string, unknown> {
  const header = [`Authorization: Bearer ${secret}`]
  if (s.topic !== undefined) {
    return {
      resourceType: 'Subscription',
      meta: { profile: [BACKPORT_PROFILE] },
      status: 'requested',
      reason,
      criteria: s.topic,
      ...(s.filters ? { _criteria: { extension: s.filters.map((f) => ({ url: FILTER_CRITERIA, valueString: f })) } } : {}),
      channel: {
        extension: [{ url: HEARTBEAT_PERIOD, valueUnsignedInt: s.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS }],
        type: 'rest-hook',
        endpoint,
        payload: FHIR_JSON,
        _payload: { extension: [{ url: PAYLOAD_CONTENT, valueCode: s.payload }] },
        header,
      },
    }
  }
  return {
    resourceType: 'Subscription',
    status: 'requested',
    reason,
    criteria: s.criteria,
    channel: { type: 'rest-hook', endpoint, ...(s.payload === 'full-resource' ? { payload: FHIR_JSON } : {}), header },
  }
}

/** The search parameters of a catch-up: the source's own, and `_lastUpdated=gt<since>`. */
export function withLastUpdated<C extends { searchParams?: unknown }>(config: C, since: string): C {
  const bound = `gt${since}`
  const params = config.searchParams
  if (params === undefined) return { ...config, searchParams: { _lastUpdated: bound } }
  if (typeof params === 'string') {
    const query = params.replace(/^\?/, '')
    return { ...config, searchParams: `${query}${query === '' ? '' : '&'}_lastUpdated=${encodeURIComponent(bound)}` }
  }
  const record = params as Record<string, unknown>
  const before = record._lastUpdated
  const merged = before === undefined ? bound : [...(Array.isArray(before) ? before : [before]), bound]
  return { ...config, searchParams: { ...record, _lastUpdated: merged } }
}

// --- Notifications ---

export type NotificationType = 'handshake' | 'heartbeat' | 'event-notification' | 'query-status' | 'query-event'

/** One change a notification carries: the record's key, and its resource when the payload has it. */
export interface NotifiedEntry {
  key: string
  type: string
  id: string
  deleted: boolean
  resource?: Record<string, unknown>
}

/** A backport notification Bundle, read. */
export interface Notification {
  type: NotificationType
  /** The subscription's status as the server sees it (`active`, `error`, `off`…). */
  status?: string
  /** `events-since-subscription-start`: the number of the last event this notification knows of. */
  eventsSinceStart?: number
  /** The `event-number`s of the events it carries. */
  eventNumbers: number[]
  /** The events' `timestamp`s (the server's clock), as ISO instants in UTC; invalid ones left out. */
  eventTimes: string[]
  entries: NotifiedEntry[]
}

/** Thrown for a body that is not a notification we can read (400). */
export class NotificationError extends Error {}

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const NOTIFICATION_TYPES = new Set(['handshake', 'heartbeat', 'event-notification', 'query-status', 'query-event'])

/**
 * Reads a backport `history` Bundle: its first entry's SubscriptionStatus `Parameters` (R4
 * backport) or `SubscriptionStatus` (R4B/R5 style) gives the type, status and counters; the other
 * entries are the changes, with their resource (full-resource) or only their URL (id-only); a
 * `request.method` of DELETE is a removal.
 */
export function readNotification(doc: unknown): Notification {
  if (!isObject(doc) || doc.resourceType !== 'Bundle') throw new NotificationError('A notification must be a FHIR Bundle')
  const entries = Array.isArray(doc.entry) ? doc.entry.filter(isObject) : []
  const head = entries[0]?.resource
  if (!isObject(head)) throw new NotificationError('The notification Bundle has no SubscriptionStatus as its first entry')
  const status = head.resourceType === 'Parameters' ? fromParameters(head) : fromStatus(head)
  return { ...status, entries: entries.slice(1).flatMap((e) => entryOf(e)) }
}

function fromParameters(p: Json): Omit<Notification, 'entries'> {
  const params = Array.isArray(p.parameter) ? p.parameter.filter(isObject) : []
  const value = (name: string) => {
    const found = params.find((x) => x.name === name)
    return found ? parameterValue(found) : undefined
  }
  const events = params
    .filter((x) => x.name === 'notification-event')
    .map((x) => (Array.isArray(x.part) ? x.part.filter(isObject) : []))
  const partOf = (parts: Json[], name: string) => {
    const part = parts.find((p) => p.name === name)
    return part ? parameterValue(part) : undefined
  }
  return checked({
    type: value('type') as NotificationType,
    status: stringOf(value('status')),
    eventsSinceStart: numberOf(value('events-since-subscription-start')),
    eventNumbers: defined(events.map((parts) => numberOf(partOf(parts, 'event-number')))),
    eventTimes: defined(events.map((parts) => instantOf(partOf(parts, 'timestamp')))),
  })
}

function fromStatus(s: Json): Omit<Notification, 'entries'> {
  if (s.resourceType !== 'SubscriptionStatus') {
    throw new NotificationError('The first entry of a notification must be a SubscriptionStatus (Parameters in R4)')
  }
  const events = Array.isArray(s.notificationEvent) ? s.notificationEvent.filter(isObject) : []
  return checked({
    type: s.type as NotificationType,
    status: stringOf(s.status),
    eventsSinceStart: numberOf(s.eventsSinceSubscriptionStart),
    eventNumbers: defined(events.map((e) => numberOf(e.eventNumber))),
    eventTimes: defined(events.map((e) => instantOf(e.timestamp))),
  })
}

/** The most events one notification may carry (servers send one, or a few batched). */
export const MAX_NOTIFICATION_EVENTS = 1000

function checked(n: Omit<Notification, 'entries'>): Omit<Notification, 'entries'> {
  if (!NOTIFICATION_TYPES.has(n.type)) throw new NotificationError(`Unknown notification type '${String(n.type)}'`)
  if (n.eventNumbers.length > MAX_NOTIFICATION_EVENTS) {
    throw new NotificationError(`A notification may carry at most ${MAX_NOTIFICATION_EVENTS} events`)
  }
  return n
}

const parameterValue = (p: Json): unknown => {
  const key = Object.keys(p).find((k) => k.startsWith('value'))
  return key === undefined ? undefined : p[key]
}
const stringOf = (v: unknown) => (typeof v === 'string' ? v : undefined)
function numberOf(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,15}$/.test(v) ? Number(v) : Number.NaN
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined
}

const defined = <T>(values: (T | undefined)[]): T[] => values.filter((v): v is T => v !== undefined)

const REFERENCE = /(?:^|\/)([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]*)?$/

/**
 * One change of a notification Bundle; entries without a valid resource type and id are skipped.
 * A resource is taken as the change only when its own `resourceType` and `id` are valid: one that
 * is not (no id, a broken type, not FHIR at all) is never stored; its entry is read from the
 * server by its address instead (id-only), as the server holds it.
 */
function entryOf(e: Json): NotifiedEntry[] {
  const request = isObject(e.request) ? e.request : {}
  const deleted = typeof request.method === 'string' && request.method.toUpperCase() === 'DELETE'
  const given = isObject(e.resource) ? e.resource : undefined
  const resource =
    given && typeof given.resourceType === 'string' && RESOURCE_TYPE.test(given.resourceType) && isFhirId(given.id)
      ? given
      : undefined
  let type: string | undefined
  let id: string | undefined
  if (resource) {
    type = resource.resourceType as string
    id = resource.id as string
  } else {
    const where = [e.fullUrl, request.url].find((u): u is string => typeof u === 'string' && REFERENCE.test(u.split('?')[0]))
    const match = where ? REFERENCE.exec(where.split('?')[0]) : null
    if (match && isFhirId(match[2])) [, type, id] = match
  }
  if (type === undefined || id === undefined) return []
  return [{ key: `${type}/${id}`, type, id, deleted, resource: deleted ? undefined : resource }]
}
