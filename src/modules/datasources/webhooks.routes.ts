import { createRoute, z } from '@hono/zod-openapi'
import { tooLarge } from '../../errors.ts'
import { sendJson } from '../../http/response-headers.ts'
import { createRouter, ErrorBody } from '../../http/router.ts'
import { readBytesLimited } from '../../lib/streams.ts'
import { MAX_WEBHOOK_BODY, receiveWebhook } from './datasources.webhooks.ts'

const error = (description: string) => ({ description, content: { 'application/json': { schema: ErrorBody } } })

const Receipt = z
  .object({
    received: z.number().int().openapi({ example: 3 }),
    applied: z.number().int().openapi({ example: 2 }),
    ignored: z.number().int().openapi({ description: 'Events of kinds the source does not subscribe', example: 1 }),
    duplicates: z.number().int().openapi({ description: 'Event ids applied before, not applied again', example: 0 }),
  })
  .openapi('WebhookReceipt')

const event = {
  type: 'object' as const,
  required: ['event'],
  properties: {
    id: { type: 'string' as const, description: 'Unique event id; a redelivery is acknowledged and not applied twice' },
    event: {
      type: 'string' as const,
      enum: ['data.created', 'data.updated', 'data.deleted', 'sync.started', 'sync.completed', 'sync.failed'],
    },
    data: { description: 'A record, an array of records (or of keys for data.deleted); see the source `dataPath`' },
    timestamp: { type: 'string' as const, format: 'date-time' },
  },
}

const receiveRoute = createRoute({
  method: 'post',
  path: '/webhooks/{endpoint}',
  tags: ['Webhooks'],
  summary: 'Deliver events to a webhook data source',
  description:
    'No bearer token: when the source has `verifySignature`, the header named by `signatureHeader` (default `X-Signature-256`) must carry `sha256=<hex>` (or bare hex) of the HMAC-SHA256 of the raw body with the source `secret`. The body is one event or, with `batchEvents`, an array of events (at most 1 MiB). `data.created`/`data.updated` upsert records by `keyField`, `data.deleted` deletes by key, `sync.started` … `sync.completed` deliver a full snapshot that replaces the records at once, `sync.failed` ends it keeping the previous records (without an open snapshot it records a failed run and puts the source in error, records untouched). Events of kinds not listed in `events` are acknowledged and ignored.',
  request: {
    params: z.object({
      endpoint: z.string().openapi({ param: { name: 'endpoint', in: 'path' }, example: 'ehr-patients' } as never),
    }),
    body: {
      required: true,
      description: 'The raw JSON event (or array of events); the signature covers these exact bytes.',
      content: { 'application/json': { schema: { oneOf: [event, { type: 'array' as const, items: event }] } } },
    },
  },
  responses: {
    200: { description: 'The delivery was applied (or acknowledged)', content: { 'application/json': { schema: Receipt } } },
    400: error('Malformed JSON or invalid events (none applied)'),
    401: error('Missing or wrong signature (nothing stored)'),
    404: error('No webhook source has this endpoint'),
    409: error('A snapshot event arrived out of order, or another sync holds the source'),
    413: error('Body larger than 1 MiB'),
  },
})

/** Signed webhook deliveries (DATA-ENGINE: Webhook); mounted under /api without JWT auth. */
export const webhooksRouter = createRouter().openapi(receiveRoute, async (c) => {
  const body = await readBody(c.req.raw, MAX_WEBHOOK_BODY)
  const receipt = await receiveWebhook(c.get('deps'), c.req.param('endpoint'), (name) => c.req.header(name), body)
  return sendJson(c, receipt, 200)
})

/** The raw body, refused with 413 past `max` bytes (by Content-Length, or while streaming). */
async function readBody(req: Request, max: number): Promise<Uint8Array<ArrayBuffer>> {
  const length = req.headers.get('content-length')
  if (length !== null && Number(length) > max) throw tooLarge(`Webhook bodies are limited to ${max} bytes`)
  if (!req.body) return new Uint8Array()
  return (await readBytesLimited(req.body, max, () =>
    tooLarge(`Webhook bodies are limited to ${max} bytes`),
  )) as Uint8Array<ArrayBuffer>
}
