import { createRoute, z } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { FHIR_JSON } from '../../http/fhir.ts'
import { sendJson, setResponseHeader } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, json } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import { fhirBase } from '../fhir/fhir.base.ts'
import { runViewDefinition } from './viewdefinitions.run.ts'
import {
  RunParameters,
  toViewDefinitionDto,
  ViewDefinitionBody,
  ViewDefinitionIdParam,
  ViewDefinitionList,
  ViewDefinitionListQuery,
} from './viewdefinitions.schemas.ts'
import {
  createViewDefinition,
  deleteViewDefinition,
  listViewDefinitions,
  replaceViewDefinition,
  requireViewDefinition,
} from './viewdefinitions.service.ts'

const tags = ['SQL on FHIR']
const fhirJson = <T>(schema: T) => ({ 'application/json': { schema }, 'application/fhir+json': { schema } })

const runDescription =
  'Runs a SQL-on-FHIR v2 ViewDefinition (docs/sql-on-fhir.md). Body: a FHIR `Parameters` resource with exactly one of ' +
  '`viewResource` (inline) and `viewReference` (`ViewDefinition/<id>`, one of your stored views; not with the `{id}` form), ' +
  'the input as `resource` parameters or `source` (the id of one of your data sources: its current records; `_since` keeps ' +
  'those written since an instant), `_format` (`json` default, `ndjson`, `csv`), `header` (csv, default true), `_limit` and ' +
  '`patient` (`Patient/<id>`: the Patient and resources whose subject or patient is it). An invalid view is a 400 ' +
  '`INVALID_VIEW_DEFINITION` whose `details` name the place (`select[1].column[0].path`); ndjson and csv answers are streamed.'

const runResponses = {
  200: {
    description: 'The rows',
    content: {
      'application/json': { schema: z.array(z.record(z.string(), z.unknown())).openapi('ViewRows') },
      'application/x-ndjson': { schema: { type: 'string' as const } },
      'text/csv': { schema: { type: 'string' as const } },
    },
  },
  ...errorResponses,
}

const runRoute = (path: '/$viewdefinition-run' | '/ViewDefinition/$viewdefinition-run') =>
  createRoute({
    method: 'post',
    path,
    tags,
    summary: 'Run a ViewDefinition over inline resources or a data source’s records',
    description: runDescription,
    security: bearer,
    middleware: auditAccess('read', 'none'),
    request: { body: { required: true, content: fhirJson(RunParameters) } },
    responses: runResponses,
  })

const runStoredRoute = createRoute({
  method: 'post',
  path: '/ViewDefinition/{id}/$viewdefinition-run',
  tags,
  summary: 'Run one of your stored ViewDefinitions',
  description: runDescription,
  security: bearer,
  middleware: auditAccess('read', 'none'),
  request: { params: ViewDefinitionIdParam, body: { required: true, content: fhirJson(RunParameters) } },
  responses: runResponses,
})

const listRoute = createRoute({
  method: 'get',
  path: '/ViewDefinition',
  tags,
  summary: 'List your stored ViewDefinitions',
  description: 'Most recently changed first; optional `name` and `resource` filters.',
  security: bearer,
  request: { query: ViewDefinitionListQuery },
  responses: { 200: json(ViewDefinitionList, 'The views and their count'), ...errorResponses },
})

const createViewRoute = createRoute({
  method: 'post',
  path: '/ViewDefinition',
  tags,
  summary: 'Store a ViewDefinition (validated: an invalid one is a 400 and is not stored)',
  security: bearer,
  request: { body: { required: true, content: fhirJson(ViewDefinitionBody) } },
  responses: { 201: json(ViewDefinitionBody, 'The stored view, with id and meta.lastUpdated'), ...errorResponses },
})

const getRoute = createRoute({
  method: 'get',
  path: '/ViewDefinition/{id}',
  tags,
  summary: 'Get one of your stored ViewDefinitions',
  security: bearer,
  request: { params: ViewDefinitionIdParam },
  responses: { 200: json(ViewDefinitionBody, 'The view'), ...errorResponses },
})

const putRoute = createRoute({
  method: 'put',
  path: '/ViewDefinition/{id}',
  tags,
  summary: 'Replace one of your stored ViewDefinitions (validated)',
  security: bearer,
  request: { params: ViewDefinitionIdParam, body: { required: true, content: fhirJson(ViewDefinitionBody) } },
  responses: { 200: json(ViewDefinitionBody, 'The stored view'), ...errorResponses },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/ViewDefinition/{id}',
  tags,
  summary: 'Delete one of your stored ViewDefinitions',
  security: bearer,
  request: { params: ViewDefinitionIdParam },
  responses: { 204: { description: 'Deleted' }, ...errorResponses },
})

const answer = (run: Awaited<ReturnType<typeof runViewDefinition>>) =>
  new Response(run.body, { status: 200, headers: { 'Content-Type': run.contentType, 'Cache-Control': 'no-store' } }) as never

/**
 * The routes of one face: /api answers JSON (`{ views, total }` for the list); /fhir answers
 * FHIR JSON (the list as a `searchset` Bundle, a created view with its `Location`), its errors being
 * OperationOutcomes.
 */
function viewDefinitionRoutes(face: 'api' | 'fhir') {
  const mediaType = face === 'fhir' ? FHIR_JSON : 'application/json'
  return createRouter()
    .openapi(runRoute('/$viewdefinition-run'), async (c) => answer(await runViewDefinition(ctxOf(c), c.req.valid('json'))))
    .openapi(runRoute('/ViewDefinition/$viewdefinition-run'), async (c) =>
      answer(await runViewDefinition(ctxOf(c), c.req.valid('json'))),
    )
    .openapi(runStoredRoute, async (c) => answer(await runViewDefinition(ctxOf(c), c.req.valid('json'), c.req.valid('param').id)))
    .openapi(listRoute, async (c) => {
      const list = await listViewDefinitions(ctxOf(c), c.req.valid('query'))
      if (face === 'api') return sendJson(c, list, 200)
      return sendJson(c, searchset(fhirBase(c), list.views, list.total) as never, 200, mediaType)
    })
    .openapi(createViewRoute, async (c) => {
      const created = await createViewDefinition(ctxOf(c), c.req.valid('json'))
      if (face === 'fhir') setResponseHeader(c, 'location', `${fhirBase(c)}/ViewDefinition/${created.id}`)
      return sendJson(c, created, 201, mediaType)
    })
    .openapi(getRoute, async (c) =>
      sendJson(c, toViewDefinitionDto(await requireViewDefinition(ctxOf(c), c.req.valid('param').id)), 200, mediaType),
    )
    .openapi(putRoute, async (c) =>
      sendJson(c, await replaceViewDefinition(ctxOf(c), c.req.valid('param').id, c.req.valid('json')), 200, mediaType),
    )
    .openapi(deleteRoute, async (c) => {
      await deleteViewDefinition(ctxOf(c), c.req.valid('param').id)
      return c.body(null, 204)
    })
}

export const viewDefinitionsRouter = viewDefinitionRoutes('api')
/** The same routes under /fhir (docs/fhir.md "ViewDefinition"). */
export const fhirViewDefinitionsRouter = viewDefinitionRoutes('fhir')

/** The list as a FHIR `searchset` Bundle of the views, each with its full URL. */
const searchset = (base: string, views: Record<string, unknown>[], total: number) => ({
  resourceType: 'Bundle',
  type: 'searchset',
  total,
  link: [{ relation: 'self', url: `${base}/ViewDefinition` }],
  entry: views.map((resource) => ({ fullUrl: `${base}/ViewDefinition/${resource.id}`, resource, search: { mode: 'match' } })),
})
