import { expect } from 'vitest'

/**
 * A check of the Subscriptions R5 Backport IG's notification shape (STU 1.1, R4 profiles
 * backport-subscription-notification-r4 and backport-subscription-status-r4), written from the IG
 * as our own assertions, part by part. Every notification a test receives goes through
 * `checkNotification`; what it answers is the notification read back, for the test's own asserts.
 */

const NOTIFICATION_TYPES = ['handshake', 'heartbeat', 'event-notification', 'query-status', 'query-event']
const STATUSES = ['requested', 'active', 'error', 'off', 'entered-in-error']
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
const COUNT = /^(0|[1-9][0-9]*)$/
const ABSOLUTE = /^(https?:\/\/|urn:uuid:|urn:oid:)/

type Json = Record<string, any>

export interface ReadEvent {
  number: number
  timestamp?: string
  focus?: string
  contexts: Json[]
}

export interface ReadNotification {
  type: string
  status: string
  subscription: string
  topic?: string
  eventsSinceStart?: number
  events: ReadEvent[]
  errors: Json[]
  /** The entries after the SubscriptionStatus. */
  payload: Json[]
}

/** The parameters of `name` (each with its `value[x]` or `part`). */
const named = (list: Json[], name: string) => list.filter((p) => p.name === name)

/** Exactly one value[x] of the expected type, and its value. */
function typedValue(p: Json, type: string, where: string): unknown {
  const keys = Object.keys(p).filter((k) => k.startsWith('value'))
  expect(keys, `${where}: one value[x]`).toEqual([`value${type}`])
  return p[`value${type}`]
}

function one(list: Json[], name: string, where: string, required: boolean): Json | undefined {
  const found = named(list, name)
  expect(found.length, `${where}.${name} cardinality`).toBeLessThanOrEqual(1)
  if (required) expect(found.length, `${where}.${name} is required`).toBe(1)
  return found[0]
}

/** The SubscriptionStatus Parameters (backport-subscription-status-r4). */
export function checkSubscriptionStatus(status: Json): Omit<ReadNotification, 'payload'> {
  expect(status.resourceType, 'SubscriptionStatus is a Parameters').toBe('Parameters')
  expect(Array.isArray(status.parameter), 'Parameters.parameter').toBe(true)
  const params = status.parameter as Json[]
  for (const p of params) expect(typeof p.name, 'every parameter has a name').toBe('string')
  const subscription = typedValue(one(params, 'subscription', 'status', true)!, 'Reference', 'subscription') as Json
  expect(subscription.reference, 'subscription is a literal reference').toMatch(/Subscription\/[^/]+$/)
  const topicParam = one(params, 'topic', 'status', false)
  const topic = topicParam ? (typedValue(topicParam, 'Canonical', 'topic') as string) : undefined
  if (topic !== undefined) expect(topic, 'topic is an absolute canonical').toMatch(/^https?:\/\//)
  const st = typedValue(one(params, 'status', 'status', true)!, 'Code', 'status') as string
  expect(STATUSES, 'status code').toContain(st)
  const type = typedValue(one(params, 'type', 'status', true)!, 'Code', 'type') as string
  expect(NOTIFICATION_TYPES, 'type code').toContain(type)
  const sinceParam = one(params, 'events-since-subscription-start', 'status', false)
  let eventsSinceStart: number | undefined
  if (sinceParam) {
    const v = typedValue(sinceParam, 'String', 'events-since-subscription-start') as string
    expect(v, 'events-since-subscription-start is a count in a string').toMatch(COUNT)
    eventsSinceStart = Number(v)
  }
  const events: ReadEvent[] = named(params, 'notification-event').map((ne, i) => {
    const where = `notification-event[${i}]`
    expect(
      Object.keys(ne).filter((k) => k.startsWith('value')),
      `${where} has parts, no value`,
    ).toEqual([])
    const parts = ne.part as Json[]
    expect(Array.isArray(parts), `${where}.part`).toBe(true)
    for (const p of parts)
      expect(['event-number', 'timestamp', 'focus', 'additional-context'], `${where} part name`).toContain(p.name)
    const number = typedValue(one(parts, 'event-number', where, true)!, 'String', 'event-number') as string
    expect(number, `${where}.event-number is a positive count`).toMatch(/^[1-9][0-9]*$/)
    const ts = one(parts, 'timestamp', where, false)
    const timestamp = ts ? (typedValue(ts, 'Instant', 'timestamp') as string) : undefined
    if (timestamp !== undefined) expect(timestamp, `${where}.timestamp is an instant`).toMatch(INSTANT)
    const f = one(parts, 'focus', where, false)
    const focus = f ? ((typedValue(f, 'Reference', 'focus') as Json).reference as string) : undefined
    if (f) expect(typeof focus, `${where}.focus is a literal reference`).toBe('string')
    const contexts = named(parts, 'additional-context').map((c) => typedValue(c, 'Reference', 'additional-context') as Json)
    for (const c of contexts) {
      expect(c.reference !== undefined || c.identifier !== undefined, `${where}.additional-context refers`).toBe(true)
    }
    return { number: Number(number), timestamp, focus, contexts }
  })
  if (type === 'handshake' || type === 'heartbeat' || type === 'query-status') {
    expect(events, `a ${type} carries no notification-event`).toEqual([])
  }
  if (eventsSinceStart !== undefined) {
    for (const e of events)
      expect(e.number, 'no event number beyond events-since-subscription-start').toBeLessThanOrEqual(eventsSinceStart)
  }
  const numbers = events.map((e) => e.number)
  expect(numbers, 'event numbers ascend').toEqual([...numbers].sort((a, b) => a - b))
  const errors = named(params, 'error').map((e) => typedValue(e, 'CodeableConcept', 'error') as Json)
  return { type, status: st, subscription: subscription.reference as string, topic, eventsSinceStart, events, errors }
}

/**
 * A notification Bundle (backport-subscription-notification-r4): a `history` Bundle whose first
 * entry is the SubscriptionStatus; every entry with `request` and `response` (R4 bdl-3, bdl-4) and
 * an absolute `fullUrl`; the payload entries as `payload` asks (`empty`: none; `id-only`: a fullUrl
 * and no resource; `full-resource`: a resource).
 */
export function checkNotification(bundle: Json, payload?: 'empty' | 'id-only' | 'full-resource'): ReadNotification {
  expect(bundle.resourceType, 'a Bundle').toBe('Bundle')
  expect(bundle.type, 'of type history').toBe('history')
  if (bundle.timestamp !== undefined) expect(bundle.timestamp, 'Bundle.timestamp is an instant').toMatch(INSTANT)
  const entries = bundle.entry as Json[]
  expect(Array.isArray(entries) && entries.length >= 1, 'at least the SubscriptionStatus entry').toBe(true)
  entries.forEach((e, i) => {
    expect(e.request?.method, `entry[${i}].request.method (bdl-3)`).toMatch(/^(GET|HEAD|POST|PUT|DELETE|PATCH)$/)
    expect(typeof e.request?.url, `entry[${i}].request.url (bdl-3)`).toBe('string')
    expect(typeof e.response?.status, `entry[${i}].response.status (bdl-4)`).toBe('string')
    if (e.fullUrl !== undefined) expect(e.fullUrl, `entry[${i}].fullUrl is absolute`).toMatch(ABSOLUTE)
  })
  const status = checkSubscriptionStatus(entries[0].resource)
  const rest = entries.slice(1)
  if (status.type === 'handshake' || status.type === 'heartbeat') expect(rest, `a ${status.type} carries no payload`).toEqual([])
  if (payload === 'empty') expect(rest, 'empty: no payload entries').toEqual([])
  if (payload === 'id-only') {
    for (const e of rest) {
      expect(e.resource, 'id-only: no resource').toBeUndefined()
      expect(typeof e.fullUrl, 'id-only: the fullUrl').toBe('string')
    }
  }
  if (payload === 'full-resource')
    for (const e of rest) expect(typeof e.resource?.resourceType, 'full-resource: a resource').toBe('string')
  return { ...status, payload: rest }
}
