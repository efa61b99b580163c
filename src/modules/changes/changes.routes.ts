import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses } from '../../http/router.ts'
import { ChangePage, ListChangesQuery } from './changes.schemas.ts'
import { listChanges } from './changes.service.ts'

const listRoute = createRoute({
  method: 'get',
  path: '/changes/panels',
  tags: ['Changes'],
  summary: 'List the change records of panels the caller can see',
  description:
    'Changes of the caller’s own panels (deleted ones included) and of the tenant’s panels that have a published view, newest first. `since` is inclusive; page with `limit` and `offset` or `page`.',
  security: bearer,
  request: { query: ListChangesQuery },
  responses: {
    200: { description: 'One page of change records', content: { 'application/json': { schema: ChangePage } } },
    ...errorResponses,
  },
})

export const changesRouter = createRouter().openapi(listRoute, async (c) => {
  const query = c.req.valid('query')
  return sendJson(c, await listChanges(ctxOf(c, query), query), 200)
})
