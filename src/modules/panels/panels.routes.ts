import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { paginationHeaders } from '../../http/pagination.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, IdParam, json, TenantQuery } from '../../http/router.ts'
import { CreatePanelBody, DeletePanelBody, ListPanelsQuery, Panel, PanelList, UpdatePanelBody } from './panels.schemas.ts'
import { createPanel, deletePanel, getPanel, listPanels, updatePanel } from './panels.service.ts'

const tags = ['Panels']

const listRoute = createRoute({
  method: 'get',
  path: '/panels',
  tags,
  summary: 'List the panels of a tenant and user',
  description:
    'Every panel of the owner, newest first. With any of `page`, `limit`, `sort`, `order` or `search` the answer carries `X-Total-Count` (the number of matching panels) and `Link` headers. With `page` or `limit` it is one page (`limit` default 50) and `Link` names first, prev, next and last pages; without them it is every matching panel as one page, and `Link` names that request as first and last.',
  security: bearer,
  request: { query: ListPanelsQuery },
  responses: { 200: json(PanelList, 'Panels with their cohort rules'), ...errorResponses },
})

const getRoute = createRoute({
  method: 'get',
  path: '/panels/{id}',
  tags,
  summary: 'Get one panel',
  security: bearer,
  request: { params: IdParam, query: TenantQuery },
  responses: { 200: json(Panel, 'The panel'), ...errorResponses },
})

const createPanelRoute = createRoute({
  method: 'post',
  path: '/panels',
  tags,
  summary: 'Create a panel (with an empty cohort rule)',
  security: bearer,
  request: { body: { required: true, content: { 'application/json': { schema: CreatePanelBody } } } },
  responses: { 201: json(Panel, 'The created panel'), ...errorResponses },
})

const updateRoute = createRoute({
  method: 'put',
  path: '/panels/{id}',
  tags,
  summary: 'Update a panel (name, description, metadata, cohort rule)',
  security: bearer,
  request: { params: IdParam, body: { required: true, content: { 'application/json': { schema: UpdatePanelBody } } } },
  responses: { 200: json(Panel, 'The updated panel'), ...errorResponses },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/panels/{id}',
  tags,
  summary: 'Delete a panel (soft deletion; its change records stay)',
  security: bearer,
  request: { params: IdParam, body: { required: false, content: { 'application/json': { schema: DeletePanelBody } } } },
  responses: { 204: { description: 'Deleted' }, ...errorResponses },
})

export const panelsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const query = c.req.valid('query')
    const { items, page } = await listPanels(ctxOf(c, query), query)
    if (page) paginationHeaders(c, page)
    return sendJson(c, items, 200)
  })
  .openapi(getRoute, async (c) => {
    const panel = await getPanel(ctxOf(c, c.req.valid('query')), c.req.valid('param').id)
    return sendJson(c, panel, 200)
  })
  .openapi(createPanelRoute, async (c) => {
    const body = c.req.valid('json')
    return sendJson(c, await createPanel(ctxOf(c, body), body), 201)
  })
  .openapi(updateRoute, async (c) => {
    const body = c.req.valid('json')
    return sendJson(c, await updatePanel(ctxOf(c, body), c.req.valid('param').id, body), 200)
  })
  .openapi(deleteRoute, async (c) => {
    await deletePanel(ctxOf(c, c.req.valid('json')), c.req.valid('param').id)
    return c.body(null, 204)
  })
