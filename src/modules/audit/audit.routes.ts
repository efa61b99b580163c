import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, JsonObject } from '../../http/router.ts'
import { toAuditBundle } from './audit.fhir.ts'
import { AccessPage, FHIR_JSON, ListAccessQuery } from './audit.schemas.ts'
import { listAccess } from './audit.service.ts'

const listRoute = createRoute({
  method: 'get',
  path: '/audit',
  tags: ['Audit'],
  summary: 'Read the access records of the tenant (tenant admins only)',
  description:
    'Every read of row-level data (panel and view rows, exports, imports) and every refused attempt on those routes, newest first. ' +
    'Filters: `user`, `panelId`, `viewId`, `action`, `from` (inclusive) and `to` (exclusive); page with `limit` and `offset` or `page`. ' +
    '`Accept: application/fhir+json` answers a FHIR R4 searchset Bundle of AuditEvent resources. A token without `role: admin` is a 403. See docs/audit.md.',
  security: bearer,
  request: { query: ListAccessQuery },
  responses: {
    200: {
      description: 'One page of access records',
      content: {
        'application/json': { schema: AccessPage },
        [FHIR_JSON]: {
          schema: JsonObject.openapi('AuditEventBundle', { description: 'A FHIR R4 Bundle (searchset) of AuditEvent' }),
        },
      },
    },
    ...errorResponses,
  },
})

export const auditRouter = createRouter().openapi(listRoute, async (c) => {
  const query = c.req.valid('query')
  const page = await listAccess(ctxOf(c, { tenantId: query.tenantId }), query)
  if (c.req.header('accept')?.includes(FHIR_JSON)) {
    return new Response(JSON.stringify(toAuditBundle(page, c.req.url)), {
      status: 200,
      headers: { 'Content-Type': FHIR_JSON },
    }) as never
  }
  return sendJson(c, { records: page.records, total: page.total, hasMore: page.hasMore }, 200)
})
