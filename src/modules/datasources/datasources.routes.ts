import { createRoute, z } from '@hono/zod-openapi'
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
import { DATA_SOURCE_DOC_SCHEMAS } from './datasources.config-docs.ts'
import {
  CreateDataSourceBody,
  DataSource,
  DataSourceList,
  SyncQuery,
  SyncResult,
  SyncRun,
  SyncRunList,
  SyncRunsQuery,
  TenantOnlyBody,
  UpdateDataSourceBody,
  type UpdateDataSourceInput,
} from './datasources.schemas.ts'
import {
  cancelSync,
  createDataSource,
  deleteDataSource,
  listDataSources,
  listSyncRuns,
  syncDataSource,
  updateDataSource,
} from './datasources.service.ts'
import { uploadDataSourceFile } from './datasources.upload.ts'

const tags = ['Data sources']
const optionalBody = { required: false, content: { 'application/json': { schema: TenantOnlyBody } } }

const listRoute = createRoute({
  method: 'get',
  path: '/panels/{panelId}/datasources',
  tags,
  summary: 'List the data sources of a panel',
  security: bearer,
  request: { params: PanelIdParam, query: TenantQuery },
  responses: { 200: json(DataSourceList, 'The data sources, in creation order'), ...errorResponses },
})

const createSourceRoute = createRoute({
  method: 'post',
  path: '/panels/{panelId}/datasources',
  tags,
  summary: 'Create a data source and run its initial synchronisation',
  description:
    'Answers 201 after the initial sync. When that sync fails the source still exists: `syncStatus: "error"` and `errorMessage` say why. Secrets in `config` are encrypted at rest and answered as "<SECRET>".',
  security: bearer,
  request: {
    params: PanelIdParam,
    query: TenantQuery,
    body: { required: true, content: { 'application/json': { schema: CreateDataSourceBody } } },
  },
  responses: { 201: json(DataSource, 'The created data source, after its initial sync'), ...errorResponses },
})

const updateRoute = createRoute({
  method: 'put',
  path: '/datasources/{id}',
  tags,
  summary: 'Update the type or config of a data source',
  description: 'The config is replaced as a whole; a secret sent back as "<SECRET>" keeps the stored value.',
  security: bearer,
  request: {
    params: IdParam,
    query: TenantQuery,
    body: { required: true, content: { 'application/json': { schema: UpdateDataSourceBody } } },
  },
  responses: { 200: json(DataSource, 'The updated data source'), ...errorResponses },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/datasources/{id}',
  tags,
  summary: 'Delete a data source with its records and sync runs',
  description: 'Columns that read from it keep existing with no data source.',
  security: bearer,
  request: { params: IdParam, query: TenantQuery, body: optionalBody },
  responses: { 204: { description: 'Deleted' }, ...errorResponses },
})

const syncRoute = createRoute({
  method: 'post',
  path: '/datasources/{id}/sync',
  tags,
  summary: 'Synchronise a data source now',
  description:
    'Answers 200 with the data source plus `message`, `status` and `recordsProcessed`; a failed sync is also a 200, with `syncStatus: "error"` and `lastSyncAt` unchanged. With `?async=true` answers 202 with the sync run to poll at `/datasources/{id}/sync-runs`.',
  security: bearer,
  request: { params: IdParam, query: SyncQuery, body: optionalBody },
  responses: {
    200: json(SyncResult, 'The synchronisation result'),
    202: json(SyncRun, 'The sync run, continuing in the background'),
    ...conflictResponse,
    ...errorResponses,
  },
})

const cancelRoute = createRoute({
  method: 'post',
  path: '/datasources/{id}/sync/cancel',
  tags,
  summary: 'Cancel the running synchronisation of a data source',
  description:
    'The running sync stops at its next batch boundary and ends with `status: "cancelled"`; a full sync then leaves the previous records untouched. Answers the sync run (200); 409 when no sync is running.',
  security: bearer,
  request: { params: IdParam, query: TenantQuery, body: optionalBody },
  responses: { 200: json(SyncRun, 'The sync run asked to stop'), ...conflictResponse, ...errorResponses },
})

const syncRunsRoute = createRoute({
  method: 'get',
  path: '/datasources/{id}/sync-runs',
  tags,
  summary: 'List the sync runs of a data source, newest first',
  security: bearer,
  request: { params: IdParam, query: SyncRunsQuery },
  responses: { 200: json(SyncRunList, 'Sync runs and their total'), ...errorResponses },
})

const binary = { schema: { type: 'string' as const, format: 'binary' } }

const uploadRoute = createRoute({
  method: 'put',
  path: '/datasources/{id}/file',
  tags,
  summary: 'Upload the file of a file data source and synchronise it',
  description:
    "For `file`, `csv`, `json` and `excel` sources. The body is the file itself (any content type; name from `?filename=` or `Content-Disposition`) or multipart/form-data with the file in the field `file`. The file is stored under the tenant's upload folder, must fit `UPLOAD_MAX_BYTES` and the source's `maxFileSize` (413) and have an extension in its `allowedExtensions` (400); the source's `filePath` then points at it and a sync runs, answered like `POST /datasources/{id}/sync`.",
  security: bearer,
  request: {
    params: IdParam,
    query: SyncQuery.extend({
      filename: z.string().max(255).optional().openapi({ description: 'Name of a raw-body upload, e.g. patients.csv' }),
    }),
    body: {
      required: true,
      content: {
        'application/octet-stream': binary,
        'text/csv': binary,
        'multipart/form-data': {
          schema: {
            type: 'object' as const,
            properties: { file: { type: 'string' as const, format: 'binary' } },
            required: ['file'],
          },
        },
      },
    },
  },
  responses: {
    200: json(SyncResult, 'The file was stored; the synchronisation result'),
    202: json(SyncRun, 'The file was stored; the sync run, continuing in the background'),
    ...conflictResponse,
    ...errorResponses,
  },
})

/** What the flat routes and their nested aliases validate: `panelId` only on the alias. */
type ItemInput<Query, Json> = { out: { param: { id: number; panelId?: number }; query: Query; json: Json } }
type ItemContext<Query, Json = TenantClaim> = Context<AppEnv, string, ItemInput<Query, Json>>

const updateSource = async (c: ItemContext<TenantClaim, UpdateDataSourceInput>) => {
  const [{ id, panelId }, body] = [c.req.valid('param'), c.req.valid('json')]
  return sendJson(c, await updateDataSource(ctxOf(c, c.req.valid('query'), body), id, body, { panelId }), 200)
}

const deleteSource = async (c: ItemContext<TenantClaim>) => {
  const { id, panelId } = c.req.valid('param')
  await deleteDataSource(ctxOf(c, c.req.valid('query'), c.req.valid('json')), id, { panelId })
  return c.body(null, 204)
}

const syncSource = async (c: ItemContext<z.infer<typeof SyncQuery>>) => {
  const [{ id, panelId }, query] = [c.req.valid('param'), c.req.valid('query')]
  const outcome = await syncDataSource(ctxOf(c, query, c.req.valid('json')), id, { background: query.async, panelId })
  return outcome.background ? sendJson(c, outcome.run, 202) : sendJson(c, outcome.result, 200)
}

export const datasourcesRouter = createRouter()
  .openapi(listRoute, async (c) => {
    return sendJson(c, await listDataSources(ctxOf(c, c.req.valid('query')), c.req.valid('param').panelId), 200)
  })
  .openapi(createSourceRoute, async (c) => {
    const body = c.req.valid('json')
    return sendJson(c, await createDataSource(ctxOf(c, c.req.valid('query'), body), c.req.valid('param').panelId, body), 201)
  })
  .openapi(updateRoute, updateSource)
  .openapi(nestedUnderPanel(updateRoute), updateSource)
  .openapi(deleteRoute, deleteSource)
  .openapi(nestedUnderPanel(deleteRoute), deleteSource)
  .openapi(syncRoute, syncSource)
  .openapi(nestedUnderPanel(syncRoute), syncSource)
  .openapi(cancelRoute, async (c) => {
    return sendJson(c, await cancelSync(ctxOf(c, c.req.valid('query'), c.req.valid('json')), c.req.valid('param').id), 200)
  })
  .openapi(uploadRoute, async (c) => {
    const query = c.req.valid('query')
    const outcome = await uploadDataSourceFile(ctxOf(c, query), c.req.valid('param').id, c.req.raw, { background: query.async })
    return outcome.background ? sendJson(c, outcome.run, 202) : sendJson(c, outcome.result, 200)
  })
  .openapi(syncRunsRoute, async (c) => {
    const query = c.req.valid('query')
    return sendJson(c, await listSyncRuns(ctxOf(c, query), c.req.valid('param').id, query.limit), 200)
  })

// The per-type body schemas that CreateDataSource and UpdateDataSource refer to in the document.
for (const [refId, schema] of DATA_SOURCE_DOC_SCHEMAS) datasourcesRouter.openAPIRegistry.register(refId, schema)
