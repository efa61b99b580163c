import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, conflictResponse, createRouter, errorResponses, PanelIdParam, TenantQuery } from '../../http/router.ts'
import { PanelViewDefinitionBody } from './viewdefinitions.panel.schemas.ts'
import { deletePanelViewDefinition, getPanelViewDefinition, putPanelViewDefinition } from './viewdefinitions.panel.service.ts'
import { ViewDefinitionBody } from './viewdefinitions.schemas.ts'

/** `/api/panels/{panelId}/viewdefinition` (docs/sql-on-fhir.md, "Panels defined by a ViewDefinition"). */

const tags = ['SQL on FHIR']
const path = '/panels/{panelId}/viewdefinition'
const viewAnswer = (description: string) => ({ description, content: { 'application/json': { schema: ViewDefinitionBody } } })

const getRoute = createRoute({
  method: 'get',
  path,
  tags,
  summary: "The panel's base columns as a ViewDefinition",
  description: 'For a panel defined by a ViewDefinition: that view, unchanged. Otherwise a flat view of its base columns.',
  security: bearer,
  request: { params: PanelIdParam, query: TenantQuery },
  responses: { 200: viewAnswer('The ViewDefinition'), ...errorResponses },
})

const putRoute = createRoute({
  method: 'put',
  path,
  tags,
  summary: 'Define the panel by a ViewDefinition',
  description:
    "The panel's base columns become the view's columns and its rows the view's rows over its records: several rows per " +
    'record with `forEach`/`unionAll`/`repeat`, each keyed `<record key>#<position>`. Replacing the view is one change ' +
    'record; the same view again changes nothing. An invalid view is a 400 `INVALID_VIEW_DEFINITION` naming the place; ' +
    'a 409 when a base column the view drops is referenced by a calculated column.',
  security: bearer,
  request: {
    params: PanelIdParam,
    body: { required: true, content: { 'application/json': { schema: PanelViewDefinitionBody } } },
  },
  responses: { 200: viewAnswer('The view the panel is defined by'), ...errorResponses, ...conflictResponse },
})

const deleteRoute = createRoute({
  method: 'delete',
  path,
  tags,
  summary: 'Stop defining the panel by a ViewDefinition',
  description: "One row per record again; the view's columns stay as ordinary base columns.",
  security: bearer,
  request: { params: PanelIdParam, query: TenantQuery },
  responses: { 204: { description: 'Done' }, ...errorResponses },
})

export const panelViewDefinitionRouter = createRouter()
  .openapi(getRoute, async (c) => {
    const view = await getPanelViewDefinition(ctxOf(c, c.req.valid('query')), c.req.valid('param').panelId)
    return sendJson(c, view, 200)
  })
  .openapi(putRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await putPanelViewDefinition(ctxOf(c, input), c.req.valid('param').panelId, input), 200)
  })
  .openapi(deleteRoute, async (c) => {
    await deletePanelViewDefinition(ctxOf(c, c.req.valid('query')), c.req.valid('param').panelId)
    return c.body(null, 204)
  })
