import { createRoute } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { ctxOf } from '../../http/auth.ts'
import { sendJson, setResponseHeader } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, IdParam, PanelIdParam } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import { RowsQuery, RowsResponse } from './rows.schemas.ts'
import { listPanelRows, listViewRows, type RowsAnswer } from './rows.service.ts'

const rowsRouteDescription =
  'Paged rows of materialised cells (`page` 1-based, `limit` 1–100, default 50). `sort` (a column name) and `order` sort first; ' +
  '`search` is a case-insensitive substring over `searchFields` (comma-separated column names) or every text column; ' +
  '`filters` is a JSON array of FilterCriteria (all 18 operators, nested `conditions` groups). The panel cohort rule always applies. ' +
  'Unknown columns and operators that cannot apply to a column type are 400s naming the criterion. ' +
  '`Server-Timing: rows;desc="members"` says a view\'s page came from its stored members (an index walk), `desc="query"` from the row query over the panel; for a view with groups or aggregations, `summary;desc="members"` or `"query"` says the same of them (docs/views-and-rows.md "Access paths").'

/** Served here, beside the panel's rows, and listed with the view routes. */
const viewRowsRoute = createRoute({
  method: 'get',
  path: '/views/{id}/rows',
  tags: ['Views'],
  summary:
    "A view's rows: its filters, sorting, columns, groups and aggregations (owner, or any user of the tenant when published)",
  description: `${rowsRouteDescription} The request's \`filters\` are ANDed with the view's; \`groups\` and \`aggregations\` come when the view has groupBy or aggregations.`,
  security: bearer,
  middleware: auditAccess('read', 'view'),
  request: { params: IdParam, query: RowsQuery },
  responses: {
    200: { description: 'One page of the view rows', content: { 'application/json': { schema: RowsResponse } } },
    ...errorResponses,
  },
})

const panelRowsRoute = createRoute({
  method: 'get',
  path: '/panels/{panelId}/rows',
  tags: ['Rows'],
  summary: "A panel's rows (owner only): every column, the cohort rule applied",
  description: rowsRouteDescription,
  security: bearer,
  middleware: auditAccess('read', 'panel'),
  request: { params: PanelIdParam, query: RowsQuery },
  responses: {
    200: { description: 'One page of rows', content: { 'application/json': { schema: RowsResponse } } },
    ...errorResponses,
  },
})

/**
 * The page, with `Server-Timing: rows;desc="members"` (or `"query"`): where it came from, and
 * `summary;desc=…` where its groups and aggregations came from (docs/views-and-rows.md).
 */
function sendRows(c: Context, answer: RowsAnswer) {
  const summary = answer.summaryPath ? `, summary;desc="${answer.summaryPath}"` : ''
  setResponseHeader(c, 'Server-Timing', `rows;desc="${answer.path}"${summary}`)
  return sendJson(c, answer.body, 200)
}

/** The view's rows come first: the OpenAPI document lists them after the other view routes. */
export const rowsRouter = createRouter()
  .openapi(viewRowsRoute, async (c) => {
    const query = c.req.valid('query')
    return sendRows(c, await listViewRows(ctxOf(c, query), c.req.valid('param').id, query, c.req.url))
  })
  .openapi(panelRowsRoute, async (c) => {
    const query = c.req.valid('query')
    return sendRows(c, await listPanelRows(ctxOf(c, query), c.req.valid('param').panelId, query, c.req.url))
  })
