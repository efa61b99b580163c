import type { FhirPayloadContent } from '../../db/schema-live.ts'
import { type FieldIssue, invalid } from '../../errors.ts'
import { BACKPORT, MEMBERSHIP_EVENTS, type MembershipEvent, splitHeader, topicCanonical } from '../fhir-topic/fhir.topic.ts'

/**
 * Reads a posted R4 Subscription of the backport profile (docs/fhir.md "Creating a subscription")
 * into what the service stores. Every fault is collected and answered at once: a 400 whose issues
 * name the element (`Subscription.channel.endpoint`, …).
 */

export interface ParsedSubscription {
  topic: string
  /** The filter-criteria values as sent. */
  filters: string[]
  viewId: number
  /** The moves asked for; all three when no `membership-event` filter is given. */
  events: MembershipEvent[]
  endpoint: string
  payload: FhirPayloadContent
  heartbeatSeconds: number | null
  timeoutSeconds: number | null
  /** channel.header as sent (`Name: value`). */
  headers: string[]
  reason: string
}

const PAYLOADS: readonly FhirPayloadContent[] = ['empty', 'id-only', 'full-resource']

/** Headers a subscription may not set: the delivery's own (signature, ids, content type) and the transport's. */
const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'host', 'user-agent', 'x-signature-256', 'connection'])
const RESERVED_PREFIXES = ['x-event-', 'x-delivery-']
const MAX_HEADERS = 10

type Json = Record<string, unknown>

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const extensionsOf = (v: unknown): Json[] => (isObject(v) && Array.isArray(v.extension) ? v.extension.filter(isObject) : [])

/** The parsed subscription, or a 400 listing every element at fault. `base` is the face's `…/fhir`. */
export function parseSubscription(body: unknown, base: string): ParsedSubscription {
  const issues: FieldIssue[] = []
  const fault = (path: string, message: string) => issues.push({ path: `Subscription${path}`, message })
  const s = isObject(body) ? body : {}
  if (s.resourceType !== 'Subscription') fault('.resourceType', 'must be "Subscription"')
  if (s.status !== undefined && s.status !== 'requested') fault('.status', 'must be "requested" (or absent) on create')
  if (typeof s.reason !== 'string' || s.reason.trim() === '') fault('.reason', 'is required (R4 Subscription.reason 1..1)')
  if (s.end !== undefined) fault('.end', 'is not supported: delete the subscription to end it')

  const topic = topicCanonical(base)
  if (s.criteria !== topic) fault('.criteria', `must be the topic canonical ${topic}`)
  const filters: string[] = []
  let viewId: number | undefined
  let events: MembershipEvent[] | undefined
  for (const ext of extensionsOf(s._criteria)) {
    if (ext.url !== BACKPORT.filterCriteria) continue
    if (typeof ext.valueString !== 'string') {
      fault('.criteria.extension', 'a filter-criteria extension needs a valueString')
      continue
    }
    filters.push(ext.valueString)
    const read = readFilter(ext.valueString)
    if ('error' in read) fault('.criteria.extension', read.error)
    else {
      if (read.viewId !== undefined) {
        if (viewId !== undefined && viewId !== read.viewId) fault('.criteria.extension', 'names more than one Group _id')
        viewId = read.viewId
      }
      if (read.events) events = [...new Set([...(events ?? []), ...read.events])]
    }
  }
  if (viewId === undefined) fault('.criteria.extension', 'the filter Group?_id=<viewId> is required')

  const channel = isObject(s.channel) ? s.channel : undefined
  if (!channel) fault('.channel', 'is required')
  const c = channel ?? {}
  if (c.type !== 'rest-hook') fault('.channel.type', 'must be "rest-hook"')
  if (typeof c.endpoint !== 'string' || !URL.canParse(c.endpoint)) fault('.channel.endpoint', 'must be an absolute URL')
  if (c.payload !== 'application/fhir+json') fault('.channel.payload', 'must be "application/fhir+json"')
  const content = extensionsOf(c._payload).find((e) => e.url === BACKPORT.payloadContent)?.valueCode
  if (!PAYLOADS.includes(content as FhirPayloadContent)) {
    fault('.channel.payload.extension', `the payload-content extension must be one of ${PAYLOADS.join(', ')}`)
  }
  const heartbeat = unsignedExtension(c, BACKPORT.heartbeatPeriod, 'heartbeat-period', fault)
  const timeout = unsignedExtension(c, BACKPORT.timeout, 'timeout', fault)
  if (extensionsOf(c).some((e) => e.url === BACKPORT.maxCount && e.valueUnsignedInt !== 1 && e.valuePositiveInt !== 1)) {
    fault('.channel.extension', 'max-count other than 1 is not supported: each notification carries one event')
  }
  const headers = readHeaders(c.header, fault)

  if (issues.length > 0) throw invalid(issues, 'The Subscription is invalid')
  return {
    topic,
    filters,
    viewId: viewId as number,
    events: events ?? [...MEMBERSHIP_EVENTS],
    endpoint: c.endpoint as string,
    payload: content as FhirPayloadContent,
    heartbeatSeconds: heartbeat,
    timeoutSeconds: timeout,
    headers,
    reason: (s.reason as string).trim(),
  }
}

/** One filter-criteria value: `Group?_id=5`, `Group?membership-event=entered,left`, or both joined by `&`. */
function readFilter(value: string): { viewId?: number; events?: MembershipEvent[] } | { error: string } {
  const [type, query, ...rest] = value.split('?')
  if (type !== 'Group' || query === undefined || rest.length > 0) {
    return { error: `"${value}": expected Group?_id=<viewId> or Group?membership-event=entered|left|updated` }
  }
  const out: { viewId?: number; events?: MembershipEvent[] } = {}
  for (const [name, v] of new URLSearchParams(query)) {
    if (name === '_id') {
      if (!/^[1-9][0-9]{0,15}$/.test(v)) return { error: `"${value}": _id must be a view id` }
      out.viewId = Number(v)
    } else if (name === 'membership-event') {
      const list = v.split(',')
      const unknown = list.filter((e) => !(MEMBERSHIP_EVENTS as readonly string[]).includes(e))
      if (unknown.length > 0 || list.length === 0) {
        return { error: `"${value}": membership-event must be ${MEMBERSHIP_EVENTS.join(', ')} (comma-separated)` }
      }
      out.events = list as MembershipEvent[]
    } else return { error: `"${value}": unknown filter parameter ${name}` }
  }
  return out
}

function unsignedExtension(c: Json, url: string, name: string, fault: (path: string, message: string) => void) {
  const ext = extensionsOf(c).find((e) => e.url === url)
  if (!ext) return null
  const v = ext.valueUnsignedInt
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 86_400) {
    fault('.channel.extension', `${name} needs a valueUnsignedInt of seconds from 1 to 86400`)
    return null
  }
  return v
}

function readHeaders(value: unknown, fault: (path: string, message: string) => void): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.length > MAX_HEADERS) {
    fault('.channel.header', `must be a list of at most ${MAX_HEADERS} "Name: value" strings`)
    return []
  }
  const out: string[] = []
  for (const h of value) {
    const parsed = typeof h === 'string' ? splitHeader(h) : undefined
    if (!parsed) {
      fault('.channel.header', `${JSON.stringify(h)} is not a "Name: value" header`)
      continue
    }
    const name = parsed[0].toLowerCase()
    if (RESERVED_HEADERS.has(name) || RESERVED_PREFIXES.some((p) => name.startsWith(p))) {
      fault('.channel.header', `${parsed[0]} is set by the delivery itself`)
      continue
    }
    out.push(h as string)
  }
  return out
}
