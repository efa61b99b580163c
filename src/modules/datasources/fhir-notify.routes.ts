import { createRoute, z } from '@hono/zod-openapi'
import { AppError, tooLarge } from '../../errors.ts'
import { sendJson } from '../../http/response-headers.ts'
import { createRouter, ErrorBody } from '../../http/router.ts'
import { readBytesLimited } from '../../lib/streams.ts'
import { type Addressed, MAX_NOTIFICATION_BODY, receiveFhirNotification } from './datasources.fhir-notify.ts'
import { verifySender } from './datasources.fhir-notify-sender.ts'

const error = (description: string) => ({ description, content: { 'application/json': { schema: ErrorBody } } })

const Receipt = z
  .object({
    type: z.string().openapi({ description: 'The notification type', example: 'event-notification' }),
    applied: z.number().int().openapi({ description: 'Records written or removed', example: 1 }),
    duplicate: z.boolean().openapi({
      description:
        'Its events were seen before: not applied as sent (a late copy, or a server counting again, has its resources read again as they are now)',
    }),
    catchUp: z.boolean().openapi({ description: 'A catch-up search of `_lastUpdated` was started' }),
  })
  .openapi('FhirNotificationReceipt')

const notifyRoute = createRoute({
  method: 'post',
  path: '/fhir-notify/{token}',
  tags: ['Data sources'],
  summary: "Receive a FHIR Subscription notification for a fhir source's live rows",
  description:
    'The channel endpoint the service registers in the upstream Subscription of a `fhir` source with `config.subscription`. No bearer token of ours: the unguessable `{token}` names the source, and the `Authorization` header must be the channel header the Subscription was made with; either wrong or missing is a 401 and nothing changes. While the feed of the source is switched off (`config.subscription.enabled: false`) a notification with the right token and header is a 409, and nothing changes. A backport `history` Bundle (handshake, heartbeat, event-notification) or, for classic criteria, an empty body or a resource; classic senders may also `PUT` or `POST` to `/fhir-notify/{token}/{type}/{id}`. At most 8 MiB.',
  request: {
    params: z.object({
      token: z.string().openapi({ param: { name: 'token', in: 'path' }, example: 'k3J9…' } as never),
    }),
    body: {
      required: false,
      content: {
        'application/fhir+json': { schema: { type: 'object' as const } },
        'application/json': { schema: { type: 'object' as const } },
      },
    },
  },
  responses: {
    200: { description: 'Acknowledged (and applied)', content: { 'application/json': { schema: Receipt } } },
    400: error('Not a notification the service can read'),
    401: error('Wrong or missing token or channel header (nothing changed)'),
    409: error("The source's live feed is switched off (`config.subscription.enabled: false`; nothing changed)"),
    413: error('Body larger than 8 MiB'),
    415: error('A body that is not JSON'),
    503: error('A removal met a running sync of the source: nothing was done, send it again (Retry-After)'),
  },
})

/**
 * FHIR Subscription notifications of `fhir` sources; mounted at the root, outside /api and /fhir.
 * Classic rest-hook senders that append the resource's address to the endpoint (`PUT
 * {endpoint}/Patient/123`, HAPI's way with a payload) reach the same receiver: a classic
 * notification, answered by a catch-up.
 */
export const fhirNotifyRouter = createRouter().openapi(notifyRoute, async (c) => {
  // The sender is checked before its body is read: a stranger learns nothing, not even a size limit.
  const sender = await verifySender(c.get('deps'), c.req.param('token'), c.req.header('authorization'))
  const receipt = await receiveFhirNotification(sender, await readBody(c.req.raw, MAX_NOTIFICATION_BODY))
  return sendJson(c, receipt, 200)
})

fhirNotifyRouter.on(['POST', 'PUT', 'DELETE'], '/fhir-notify/:token/:type{[A-Z][A-Za-z]{1,63}}/:id', async (c) => {
  const sender = await verifySender(c.get('deps'), c.req.param('token'), c.req.header('authorization'))
  const addressed = { type: c.req.param('type'), id: c.req.param('id'), method: c.req.method as Addressed['method'] }
  const body = c.req.method === 'DELETE' ? new Uint8Array() : await readBody(c.req.raw, MAX_NOTIFICATION_BODY)
  return sendJson(c, await receiveFhirNotification(sender, body, { addressed }), 200)
})

/** The body of a notification: JSON (FHIR's or plain) or none (a ping may say any type), at most `max` bytes. */
async function readBody(req: Request, max: number): Promise<Uint8Array> {
  const length = req.headers.get('content-length')
  if (length !== null && Number(length) > max) throw tooLarge(`Notifications are limited to ${max} bytes`)
  if (!req.body) return new Uint8Array()
  const body = await readBytesLimited(req.body, max, () => tooLarge(`Notifications are limited to ${max} bytes`))
  const mediaType = req.headers.get('content-type')?.split(';')[0].trim().toLowerCase() ?? ''
  if (mediaType !== '' && !JSON_MEDIA_TYPE.test(mediaType) && body.some((b) => b > 0x20)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Notifications are JSON (application/fhir+json), not ${mediaType}`)
  }
  return body
}

const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/
