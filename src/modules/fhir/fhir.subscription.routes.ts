import { createRoute, z } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendFhir } from '../../http/fhir.ts'
import { createRouter, errorResponses, IdParam } from '../../http/router.ts'
import { fhirBase } from './fhir.base.ts'
import { fhirResource } from './fhir.resource.ts'
import {
  createFhirSubscription,
  deleteFhirSubscription,
  fhirSubscriptionEvents,
  fhirSubscriptionStatus,
  getFhirSubscription,
  listFhirSubscriptions,
} from './fhir.subscription.service.ts'

/** Backport Subscriptions to the view-membership topic (docs/fhir.md "View membership as a topic"). */

const tags = ['FHIR']
const security = [{ Bearer: [] }]

const SubscriptionBody = z
  .object({ resourceType: z.literal('Subscription') })
  .passthrough()
  .openapi('FhirSubscriptionCreate', { description: 'An R4 Subscription of the Subscriptions Backport IG profile' })

const createRouteDef = createRoute({
  method: 'post',
  path: '/Subscription',
  tags,
  security,
  summary: 'Subscribe to a view’s membership (backport topic)',
  description:
    'criteria = the topic canonical, filter-criteria `Group?_id=<viewId>` (required) and `Group?membership-event=`; rest-hook; ' +
    'payload application/fhir+json with payload-content empty | id-only | full-resource. Answers `requested`; a handshake follows.',
  request: {
    body: {
      required: true,
      content: { 'application/fhir+json': { schema: SubscriptionBody }, 'application/json': { schema: SubscriptionBody } },
    },
  },
  responses: { 201: fhirResource('The stored Subscription (status requested)', 'Subscription'), ...errorResponses },
})

const listRoute = createRoute({
  method: 'get',
  path: '/Subscription',
  tags,
  security,
  summary: 'The caller’s topic Subscriptions',
  responses: { 200: fhirResource('A searchset Bundle', 'Bundle'), ...errorResponses },
})

const readRoute = createRoute({
  method: 'get',
  path: '/Subscription/{id}',
  tags,
  security,
  summary: 'A topic Subscription',
  request: { params: IdParam },
  responses: { 200: fhirResource('The Subscription', 'Subscription'), ...errorResponses },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/Subscription/{id}',
  tags,
  security,
  summary: 'End a topic Subscription',
  request: { params: IdParam },
  responses: { 204: { description: 'Deleted: nothing more is sent' }, ...errorResponses },
})

const statusRoute = createRoute({
  method: 'get',
  path: '/Subscription/{id}/$status',
  tags,
  security,
  summary: 'The Subscription’s SubscriptionStatus',
  request: { params: IdParam },
  responses: { 200: fhirResource('A searchset Bundle of one SubscriptionStatus', 'Bundle'), ...errorResponses },
})

const EventNumber = z.coerce.number().int().min(1).optional()

const eventsRoute = createRoute({
  method: 'get',
  path: '/Subscription/{id}/$events',
  tags,
  security,
  summary: 'Replay numbered events of the Subscription',
  request: {
    params: IdParam,
    query: z.object({
      eventsSinceNumber: EventNumber,
      eventsUntilNumber: EventNumber,
      content: z.enum(['empty', 'id-only', 'full-resource']).optional(),
    }),
  },
  responses: { 200: fhirResource('A history Bundle (query-event)', 'Bundle'), ...errorResponses },
})

export const fhirSubscriptionRouter = createRouter()
  .openapi(createRouteDef, async (c) =>
    sendFhir(c, await createFhirSubscription(ctxOf(c), c.req.valid('json'), fhirBase(c)), 201),
  )
  .openapi(listRoute, async (c) => sendFhir(c, await listFhirSubscriptions(ctxOf(c), fhirBase(c)), 200))
  .openapi(readRoute, async (c) => sendFhir(c, await getFhirSubscription(ctxOf(c), c.req.valid('param').id), 200))
  .openapi(deleteRoute, async (c) => {
    await deleteFhirSubscription(ctxOf(c), c.req.valid('param').id)
    return c.body(null, 204)
  })
  .openapi(statusRoute, async (c) => sendFhir(c, await fhirSubscriptionStatus(ctxOf(c), c.req.valid('param').id), 200))
  .openapi(eventsRoute, async (c) =>
    sendFhir(c, await fhirSubscriptionEvents(ctxOf(c), c.req.valid('param').id, c.req.valid('query')), 200),
  )
