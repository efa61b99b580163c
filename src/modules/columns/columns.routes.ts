import { createRoute, type z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { ctxOf, type TenantClaim } from '../../http/auth.ts'
import type { AppEnv } from '../../http/context.ts'
import { sendJson } from '../../http/response-headers.ts'
import {
  bearer,
  conflictResponse,
  createRouter,
  errorResponses,
  IdParam,
  json,
  nestedUnderPanel,
  PanelIdParam,
  TenantQuery,
} from '../../http/router.ts'
import {
  Column,
  ColumnList,
  CreateBaseColumnBody,
  CreateCalculatedColumnBody,
  DeleteColumnBody,
  UpdateColumnBody,
  type UpdateColumnInput,
  UpdateColumnQuery,
} from './columns.schemas.ts'
import { createBaseColumn, createCalculatedColumn, deleteColumn, listColumns, updateColumn } from './columns.service.ts'

const tags = ['Columns']
const body = <T>(schema: T, required = true) => ({ required, content: { 'application/json': { schema } } })
const formulaNote =
  'A formula with problems is a 400 with `code: "FORMULA_ERROR"` and `details` listing every ExpressionError ' +
  '(`{ type: syntax|reference|type|circular, message, position?, suggestion? }`).'

const listRoute = createRoute({
  method: 'get',
  path: '/panels/{panelId}/columns',
  tags,
  summary: 'List the base and calculated columns of a panel',
  security: bearer,
  request: { params: PanelIdParam, query: TenantQuery },
  responses: { 200: json(ColumnList, 'Base and calculated columns, each ordered by id'), ...errorResponses },
})

const createBaseRoute = createRoute({
  method: 'post',
  path: '/panels/{panelId}/columns/base',
  tags,
  summary: 'Create a base column (mapped to a FHIRPath or source field)',
  description:
    '`fhirPath` or `sourceField` is required; both are stored, one defaulting to the other. Names are unique per panel (409).',
  security: bearer,
  request: { params: PanelIdParam, body: body(CreateBaseColumnBody) },
  responses: { 201: json(Column, 'The created base column'), ...errorResponses, ...conflictResponse },
})

const createCalculatedRoute = createRoute({
  method: 'post',
  path: '/panels/{panelId}/columns/calculated',
  tags,
  summary: 'Create a calculated column (formula over other columns)',
  description: `References \`{Column Name}\` must name columns of the panel and may not form a cycle. \`dependencies\`, when sent, must list every referenced column; when omitted it is derived. ${formulaNote}`,
  security: bearer,
  request: { params: PanelIdParam, body: body(CreateCalculatedColumnBody) },
  responses: { 201: json(Column, 'The created calculated column'), ...errorResponses, ...conflictResponse },
})

const updateRoute = createRoute({
  method: 'put',
  path: '/columns/{id}',
  tags,
  summary: 'Update a base or calculated column',
  description: `Renaming a column other calculated columns reference is a 409 listing them, unless \`?cascade=true\` rewrites their formulas. ${formulaNote}`,
  security: bearer,
  request: { params: IdParam, query: UpdateColumnQuery, body: body(UpdateColumnBody) },
  responses: { 200: json(Column, 'The updated column'), ...errorResponses, ...conflictResponse },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/columns/{id}',
  tags,
  summary: 'Delete a column (refused while calculated columns reference it)',
  security: bearer,
  request: { params: IdParam, query: TenantQuery, body: body(DeleteColumnBody, false) },
  responses: { 204: { description: 'Deleted' }, ...errorResponses, ...conflictResponse },
})

/** What the flat routes and their nested aliases validate: `panelId` only on the alias. */
type ItemInput<Query, Json> = { out: { param: { id: number; panelId?: number }; query: Query; json: Json } }
type ItemContext<Query, Json> = Context<AppEnv, string, ItemInput<Query, Json>>

const update = async (c: ItemContext<z.infer<typeof UpdateColumnQuery>, UpdateColumnInput>) => {
  const [{ id, panelId }, query, input] = [c.req.valid('param'), c.req.valid('query'), c.req.valid('json')]
  const column = await updateColumn(ctxOf(c, query, input), id, input, { cascade: query.cascade, panelId })
  return sendJson(c, column, 200)
}

const remove = async (c: ItemContext<TenantClaim, TenantClaim>) => {
  const { id, panelId } = c.req.valid('param')
  await deleteColumn(ctxOf(c, c.req.valid('query'), c.req.valid('json')), id, { panelId })
  return c.body(null, 204)
}

export const columnsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const columns = await listColumns(ctxOf(c, c.req.valid('query')), c.req.valid('param').panelId)
    return sendJson(c, columns, 200)
  })
  .openapi(createBaseRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await createBaseColumn(ctxOf(c, input), c.req.valid('param').panelId, input), 201)
  })
  .openapi(createCalculatedRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await createCalculatedColumn(ctxOf(c, input), c.req.valid('param').panelId, input), 201)
  })
  .openapi(updateRoute, update)
  .openapi(nestedUnderPanel(updateRoute), update)
  .openapi(deleteRoute, remove)
  .openapi(nestedUnderPanel(deleteRoute), remove)
