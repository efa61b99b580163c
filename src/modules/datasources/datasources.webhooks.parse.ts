import type { SourceRecord } from '../../connectors/types.ts'
import type { WebhookConfig } from '../../connectors/webhook.ts'
import { AppError, type FieldIssue, invalid, unauthorized } from '../../errors.ts'
import { evaluatePath } from '../../lib/formats/json-path.ts'

/**
 * Reading a webhook delivery (DATA-ENGINE: Webhook): its signature, checked in constant time, and
 * its events, every one validated before any is applied.
 */

export interface WebhookEvent {
  id?: string
  event: string
  data?: unknown
  message?: string
  records: SourceRecord[]
}

/** `sha256=<hex>` or bare hex of the raw body, checked by WebCrypto's constant-time HMAC verify. */
export async function verifySignature(secret: string, given: string | undefined, body: Uint8Array<ArrayBuffer>) {
  if (!given) throw unauthorized('UNAUTHORIZED', 'The webhook signature header is missing')
  const hex = given.trim().replace(/^sha256=/i, '')
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw unauthorized('UNAUTHORIZED', 'The webhook signature is not valid')
  const signature = new Uint8Array(hex.match(/../g)!.map((b) => Number.parseInt(b, 16)))
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ])
  if (!(await crypto.subtle.verify('HMAC', key, signature, body))) {
    throw unauthorized('UNAUTHORIZED', 'The webhook signature is not valid')
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The delivery's events, every one checked before any is applied (400 naming each bad one). */
export function parseEvents(body: Uint8Array, config: WebhookConfig): WebhookEvent[] {
  let doc: unknown
  try {
    doc = JSON.parse(new TextDecoder().decode(body))
  } catch {
    throw new AppError('INVALID_JSON', 'The webhook body is not valid JSON')
  }
  if (Array.isArray(doc) && !config.batchEvents) {
    throw invalid([{ path: 'body', message: 'an array of events needs batchEvents: true in the source config' }])
  }
  const list = Array.isArray(doc) ? doc : [doc]
  const issues: FieldIssue[] = []
  const events: WebhookEvent[] = []
  list.forEach((raw, i) => {
    const at = Array.isArray(doc) ? `body[${i}]` : 'body'
    if (!isObject(raw) || typeof raw.event !== 'string') {
      issues.push({ path: `${at}.event`, message: 'each event needs an "event" kind' })
      return
    }
    if (raw.id !== undefined && typeof raw.id !== 'string' && typeof raw.id !== 'number') {
      issues.push({ path: `${at}.id`, message: 'must be a string or a number' })
      return
    }
    const event: WebhookEvent = { id: raw.id === undefined ? undefined : String(raw.id), event: raw.event, records: [] }
    const data = config.dataPath ? evaluatePath(raw, config.dataPath) : raw.data
    if (raw.event === 'sync.failed') event.message = messageOf(raw)
    if (raw.event.startsWith('data.') && (config.events as string[]).includes(raw.event)) {
      const problem = recordsOf(event, data, config.keyField)
      if (problem) issues.push({ path: `${at}.${config.dataPath ?? 'data'}`, message: problem })
    }
    events.push(event)
  })
  if (issues.length > 0) throw invalid(issues, 'The webhook delivery has invalid events; none was applied')
  return events
}

function messageOf(raw: Record<string, unknown>): string {
  const data = raw.data
  const text = [raw.message, raw.error, isObject(data) ? (data.message ?? data.error) : data].find((v) => typeof v === 'string')
  return `The sender reported a failed synchronisation${text ? `: ${String(text).slice(0, 500)}` : ''}`
}

/** Fills `event.records` from its data (an object or an array; bare keys for deletes), or says why not. */
function recordsOf(event: WebhookEvent, data: unknown, keyField: string): string | undefined {
  const deleting = event.event === 'data.deleted'
  const items = Array.isArray(data) ? data : [data]
  for (const item of items) {
    if (deleting && (typeof item === 'string' || typeof item === 'number')) {
      event.records.push({ key: String(item), data: {}, deleted: true })
      continue
    }
    if (!isObject(item)) return `must be an object or an array of objects${deleting ? ' (or of keys)' : ''}`
    const key = evaluatePath(item, keyField)
    if (key === undefined || key === null || key === '') return `every record needs its key field '${keyField}'`
    event.records.push({ data: item, deleted: deleting })
  }
  return undefined
}
