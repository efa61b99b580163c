import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, IdParam, json, TenantQuery } from '../../http/router.ts'
import { FilterRecords, PutFiltersBody, PutSortsBody, SortRecords } from './views.criteria.schemas.ts'
import { publishView, unpublishView } from './views.publish.ts'
import { getFilters, getSorts, putFilters, putSorts } from './views.records.ts'
import {
  CopyViewBody,
  CreateViewBody,
  ListViewsQuery,
  PublishViewBody,
  UpdateViewBody,
  View,
  ViewCallerBody,
  ViewList,
} from './views.schemas.ts'
import { copyView, createView, deleteView, getView, listViews, updateView } from './views.service.ts'

const tags = ['Views']
const body = <T>(schema: T, required = true) => ({ required, content: { 'application/json': { schema } } })

const listRoute = createRoute({
  method: 'get',
  path: '/views',
  tags,
  summary: "List the caller's views and the tenant's published views",
  description:
    'Each view once, most recently updated first. Views of deleted panels never appear. Optional `panelId`, `published`, and `limit`/`offset` (then `total` counts every match).',
  security: bearer,
  request: { query: ListViewsQuery },
  responses: { 200: json(ViewList, 'Views and their total'), ...errorResponses },
})

const getRoute = createRoute({
  method: 'get',
  path: '/views/{id}',
  tags,
  summary: 'Get one view (own, or published in the tenant)',
  security: bearer,
  request: { params: IdParam, query: TenantQuery },
  responses: { 200: json(View, 'The view'), ...errorResponses },
})

const createViewRoute = createRoute({
  method: 'post',
  path: '/views',
  tags,
  summary: 'Create a view of one of your panels (unpublished)',
  security: bearer,
  request: { body: body(CreateViewBody) },
  responses: { 201: json(View, 'The created view'), ...errorResponses },
})

const updateRoute = createRoute({
  method: 'put',
  path: '/views/{id}',
  tags,
  summary: 'Update a view (owner only; config keys are merged)',
  security: bearer,
  request: { params: IdParam, body: body(UpdateViewBody) },
  responses: { 200: json(View, 'The updated view'), ...errorResponses },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/views/{id}',
  tags,
  summary: 'Delete a view (owner only)',
  security: bearer,
  request: { params: IdParam, body: body(ViewCallerBody, false) },
  responses: { 204: { description: 'Deleted' }, ...errorResponses },
})

const publishRoute = createRoute({
  method: 'post',
  path: '/views/{id}/publish',
  tags,
  summary: 'Publish a view to every user of the tenant (idempotent)',
  description:
    'The first publish notifies every other user of the tenant. Publishing again keeps `publishedAt` and notifies nobody; a new `publishConfig` is saved.',
  security: bearer,
  request: { params: IdParam, body: body(PublishViewBody, false) },
  responses: { 200: json(View, 'The published view'), ...errorResponses },
})

const copyRoute = createRoute({
  method: 'post',
  path: '/views/{id}/copy',
  tags,
  summary: 'Save a copy of a view as your own (the create permission)',
  description:
    "Creates an unpublished view of the caller with the view's content. A copy of someone else's published view on a panel the caller does not own keeps `sourceViewId`: its rows stay within that view's rows and columns, and only while the caller may read it (docs/view-sharing.md). The owner, admins and users the view gives `create` may copy it; others get 403 naming the permission.",
  security: bearer,
  request: { params: IdParam, body: body(CopyViewBody, false) },
  responses: { 201: json(View, 'The copy'), ...errorResponses },
})

const unpublishRoute = createRoute({
  method: 'post',
  path: '/views/{id}/unpublish',
  tags,
  summary: 'Withdraw a published view (idempotent)',
  security: bearer,
  request: { params: IdParam, body: body(ViewCallerBody, false) },
  responses: { 200: json(View, 'The unpublished view'), ...errorResponses },
})

const getSortsRoute = createRoute({
  method: 'get',
  path: '/views/{id}/sorts',
  tags,
  summary: "The view's sort records, in the order they apply",
  security: bearer,
  request: { params: IdParam, query: TenantQuery },
  responses: { 200: json(SortRecords, 'Sort records'), ...errorResponses },
})

const putSortsRoute = createRoute({
  method: 'put',
  path: '/views/{id}/sorts',
  tags,
  summary: "Replace the view's sort records (owner only)",
  security: bearer,
  request: { params: IdParam, body: body(PutSortsBody) },
  responses: { 200: json(SortRecords, 'The stored sort records'), ...errorResponses },
})

const getFiltersRoute = createRoute({
  method: 'get',
  path: '/views/{id}/filters',
  tags,
  summary: "The view's filter records (`id` = 1-based position)",
  security: bearer,
  request: { params: IdParam, query: TenantQuery },
  responses: { 200: json(FilterRecords, 'Filter records'), ...errorResponses },
})

const putFiltersRoute = createRoute({
  method: 'put',
  path: '/views/{id}/filters',
  tags,
  summary: "Replace the view's filter records (owner only)",
  security: bearer,
  request: { params: IdParam, body: body(PutFiltersBody) },
  responses: { 200: json(FilterRecords, 'The stored filter records'), ...errorResponses },
})

export const viewsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const query = c.req.valid('query')
    return sendJson(c, await listViews(ctxOf(c, query), query), 200)
  })
  .openapi(getRoute, async (c) => sendJson(c, await getView(ctxOf(c, c.req.valid('query')), c.req.valid('param').id), 200))
  .openapi(createViewRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await createView(ctxOf(c, input), input), 201)
  })
  .openapi(updateRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await updateView(ctxOf(c, input), c.req.valid('param').id, input), 200)
  })
  .openapi(deleteRoute, async (c) => {
    await deleteView(ctxOf(c, c.req.valid('json')), c.req.valid('param').id)
    return c.body(null, 204)
  })
  .openapi(publishRoute, async (c) => {
    const input = c.req.valid('json') ?? {}
    return sendJson(c, await publishView(ctxOf(c, input), c.req.valid('param').id, input), 200)
  })
  .openapi(copyRoute, async (c) => {
    const input = c.req.valid('json') ?? {}
    return sendJson(c, await copyView(ctxOf(c, input), c.req.valid('param').id, input), 201)
  })
  .openapi(unpublishRoute, async (c) =>
    sendJson(c, await unpublishView(ctxOf(c, c.req.valid('json')), c.req.valid('param').id), 200),
  )
  .openapi(getSortsRoute, async (c) => sendJson(c, await getSorts(ctxOf(c, c.req.valid('query')), c.req.valid('param').id), 200))
  .openapi(putSortsRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await putSorts(ctxOf(c, input), c.req.valid('param').id, input), 200)
  })
  .openapi(getFiltersRoute, async (c) =>
    sendJson(c, await getFilters(ctxOf(c, c.req.valid('query')), c.req.valid('param').id), 200),
  )
  .openapi(putFiltersRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await putFilters(ctxOf(c, input), c.req.valid('param').id, input), 200)
  })
