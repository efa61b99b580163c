import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, json } from '../../http/router.ts'
import {
  CreateSubscriptionBody,
  DeliveriesQuery,
  DeliveryPage,
  DeliverySchema,
  SubscriptionIdParam,
  SubscriptionList,
  SubscriptionSchema,
  SubscriptionsQuery,
  toSubscriptionDto,
  UpdateSubscriptionBody,
} from './subscriptions.schemas.ts'
import {
  createSubscription,
  deleteSubscription,
  listDeliveries,
  listSubscriptions,
  pingSubscription,
  requireSubscription,
  updateSubscription,
} from './subscriptions.service.ts'

const tags = ['Webhook subscriptions']

const deliveryNote =
  'Deliveries: `POST <url>` with the event JSON as the body and `X-Event-Id`, `X-Event-Type`, `X-Delivery-Id`, ' +
  '`X-Delivery-Attempt` and `X-Signature-256: sha256=<hex HMAC-SHA256 of the raw body with the secret>`; a 2xx acknowledges, ' +
  'anything else is retried after 10 s, 1 min, 5 min, 30 min, 2 h and 6 h, in seq order per subscription. See docs/live.md.'

const createSubscriptionRoute = createRoute({
  method: 'post',
  path: '/subscriptions',
  tags,
  summary: 'Subscribe an HTTPS endpoint to events of the change feed',
  description:
    '`url` must be https:// in production and may not be a loopback or private address (unless ALLOW_PRIVATE_NETWORK_SOURCES). ' +
    '`events`: event types or `*`; `panelId`/`viewId` narrow to one of your panels or a view you may read. Only events the owner ' +
    'may read are delivered, from the events committed after the subscription. Without `secret` one is generated and answered ' +
    `here only. ${deliveryNote}`,
  security: bearer,
  request: { body: { required: true, content: { 'application/json': { schema: CreateSubscriptionBody } } } },
  responses: { 201: json(SubscriptionSchema, 'The subscription (with `secret` once, when generated)'), ...errorResponses },
})

const listRoute = createRoute({
  method: 'get',
  path: '/subscriptions',
  tags,
  summary: 'List your subscriptions',
  security: bearer,
  request: { query: SubscriptionsQuery },
  responses: { 200: json(SubscriptionList, 'Your subscriptions, newest first'), ...errorResponses },
})

const getRoute = createRoute({
  method: 'get',
  path: '/subscriptions/{id}',
  tags,
  summary: 'Get one of your subscriptions (never its secret)',
  security: bearer,
  request: { params: SubscriptionIdParam, query: SubscriptionsQuery },
  responses: { 200: json(SubscriptionSchema, 'The subscription'), ...errorResponses },
})

const putRoute = createRoute({
  method: 'put',
  path: '/subscriptions/{id}',
  tags,
  summary: 'Change a subscription (fields given only)',
  description:
    '`active: true` re-enables a subscription disabled after WEBHOOK_DISABLE_AFTER failed deliveries; its queue goes on where it stopped. ' +
    '`secret` replaces the signing secret (it is not answered).',
  security: bearer,
  request: {
    params: SubscriptionIdParam,
    body: { required: true, content: { 'application/json': { schema: UpdateSubscriptionBody } } },
  },
  responses: { 200: json(SubscriptionSchema, 'The subscription'), ...errorResponses },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/subscriptions/{id}',
  tags,
  summary: 'Delete a subscription with its queue and history',
  security: bearer,
  request: { params: SubscriptionIdParam, query: SubscriptionsQuery },
  responses: { 204: { description: 'Deleted' }, ...errorResponses },
})

const deliveriesRoute = createRoute({
  method: 'get',
  path: '/subscriptions/{id}/deliveries',
  tags,
  summary: 'Recent deliveries of a subscription, newest first',
  description:
    'Each delivery with its latest attempt: status (pending, delivered, failed, skipped), attempts, status code, duration, error ' +
    'and the next try of a pending one. Finished deliveries are kept 30 days.',
  security: bearer,
  request: { params: SubscriptionIdParam, query: DeliveriesQuery },
  responses: { 200: json(DeliveryPage, 'One page of deliveries'), ...errorResponses },
})

const testRoute = createRoute({
  method: 'post',
  path: '/subscriptions/{id}/test',
  tags,
  summary: 'Send a ping event now and answer the attempt',
  description:
    'Sends `{ "type": "ping", ... }` at once, signed like every delivery, outside the queue: it does not wait behind pending ' +
    'deliveries and its failure does not count toward disabling. Answers 200 with the attempt whether the endpoint acknowledged it or not.',
  security: bearer,
  request: { params: SubscriptionIdParam, query: SubscriptionsQuery },
  responses: { 200: json(DeliverySchema, 'The attempt'), ...errorResponses },
})

export const subscriptionsRouter = createRouter()
  .openapi(createSubscriptionRoute, async (c) => {
    const body = c.req.valid('json')
    return sendJson(c, await createSubscription(ctxOf(c, body), body), 201)
  })
  .openapi(listRoute, async (c) => sendJson(c, await listSubscriptions(ctxOf(c, c.req.valid('query'))), 200))
  .openapi(getRoute, async (c) =>
    sendJson(c, toSubscriptionDto(await requireSubscription(ctxOf(c, c.req.valid('query')), c.req.valid('param').id)), 200),
  )
  .openapi(putRoute, async (c) => {
    const body = c.req.valid('json')
    return sendJson(c, await updateSubscription(ctxOf(c, body), c.req.valid('param').id, body), 200)
  })
  .openapi(deleteRoute, async (c) => {
    await deleteSubscription(ctxOf(c, c.req.valid('query')), c.req.valid('param').id)
    return c.body(null, 204)
  })
  .openapi(deliveriesRoute, async (c) => {
    const query = c.req.valid('query')
    return sendJson(c, await listDeliveries(ctxOf(c, query), c.req.valid('param').id, query), 200)
  })
  .openapi(testRoute, async (c) =>
    sendJson(c, await pingSubscription(ctxOf(c, c.req.valid('query')), c.req.valid('param').id), 200),
  )
