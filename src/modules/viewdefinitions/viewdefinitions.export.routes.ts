import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { ctxOf } from '../../http/auth.ts'
import { mountPath } from '../../http/context.ts'
import { FHIR_JSON } from '../../http/fhir.ts'
import { sendJson, setResponseHeader } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import { fhirBase } from '../fhir/fhir.base.ts'
import { exportManifest, exportState, failure } from './viewdefinitions.export.answers.ts'
import { deleteExport, exportFile, exportProgress, exportStatus, startExport } from './viewdefinitions.export.service.ts'
import { RunParameters, ViewDefinitionIdParam } from './viewdefinitions.schemas.ts'

const tags = ['SQL on FHIR']
const fhirJson = <T>(schema: T) => ({ 'application/json': { schema }, 'application/fhir+json': { schema } })
const anyJson = (description: string) => ({ description, content: fhirJson(z.record(z.string(), z.unknown())) })

const kickoffDescription =
  'Starts an asynchronous SQL-on-FHIR v2 export (docs/fhir.md "ViewDefinition export"). Body: a FHIR `Parameters` with one ' +
  'or more `view` (parts `name`, and `viewResource` or `viewReference`; none on the `{id}` form), `_format` (`ndjson` default, ' +
  '`csv`), `header` (csv), `source` (one of your data sources) or inline `resource`s, `patient` (0..*), `_since` (source only), ' +
  '`clientTrackingId`. Answers 202 with `Content-Location`, the status URL to poll (`Prefer: respond-async` is implied: ' +
  'the export is always asynchronous). `group` is refused (400).'

const kickoffRoute = {
  method: 'post' as const,
  tags,
  summary: 'Start an asynchronous export of ViewDefinitions (SQL-on-FHIR v2 $viewdefinition-export)',
  description: kickoffDescription,
  security: bearer,
  request: { body: { required: true, content: fhirJson(RunParameters) } },
  responses: { 202: anyJson('Accepted: a `Parameters` with exportId, status and location'), ...errorResponses },
}

const kickoff = (path: '/$viewdefinition-export' | '/ViewDefinition/$viewdefinition-export') =>
  createRoute({ ...kickoffRoute, path })

const kickoffStored = createRoute({
  ...kickoffRoute,
  path: '/ViewDefinition/{id}/$viewdefinition-export',
  summary: 'Start an asynchronous export of one of your stored ViewDefinitions',
  request: { ...kickoffRoute.request, params: ViewDefinitionIdParam },
})

const ExportIdParam = z.object({
  exportId: z
    .string()
    .uuid()
    .openapi({ param: { name: 'exportId', in: 'path' } }),
})

const statusRoute = createRoute({
  method: 'get',
  path: '/$viewdefinition-export/{exportId}',
  tags,
  summary: 'Poll an export: 202 with X-Progress and Retry-After while it runs, then 200 with its manifest',
  description:
    'The manifest lists one file per view (`output[].url`, downloaded with the same token). A failed export answers its ' +
    'error with the status of the error (400 for a view its input cannot be run through). Another tenant’s or user’s, a ' +
    'cancelled or an expired export is a 404.',
  security: bearer,
  request: { params: ExportIdParam },
  responses: {
    200: anyJson('The manifest'),
    202: anyJson('Still running: a `Parameters` with the status'),
    ...errorResponses,
  },
})

const deleteRoute = createRoute({
  method: 'delete',
  path: '/$viewdefinition-export/{exportId}',
  tags,
  summary: 'Cancel a running export, or remove a finished one and its files',
  security: bearer,
  request: { params: ExportIdParam },
  responses: { 202: anyJson('Cancelled or removed: a `Parameters` with exportId and status `cancelled`'), ...errorResponses },
})

const fileRoute = createRoute({
  method: 'get',
  path: '/$viewdefinition-export/{exportId}/{file}',
  tags,
  summary: 'Download one output file of a completed export (a manifest `output[].url`)',
  security: bearer,
  middleware: auditAccess('read', 'none'),
  request: {
    params: ExportIdParam.extend({
      file: z
        .string()
        .regex(/^\d{1,6}\.(ndjson|csv)$/, 'must be <index>.ndjson or <index>.csv')
        .openapi({ param: { name: 'file', in: 'path' }, example: '0.ndjson' }),
    }),
  },
  responses: {
    200: {
      description: 'The view’s rows',
      content: {
        'application/x-ndjson': { schema: { type: 'string' as const } },
        'text/csv': { schema: { type: 'string' as const } },
      },
    },
    ...errorResponses,
  },
})

/** Which face serves the routes: their base URL and the JSON media type of their answers. */
interface Face {
  base(c: Context): string
  mediaType: string
}

const FACES = {
  api: {
    base: (c: Context) => {
      const configured = c.get('deps').config.publicBaseUrl
      return configured ? `${configured}/api` : `${new URL(c.req.url).origin}${mountPath(c)}`
    },
    mediaType: 'application/json',
  },
  fhir: { base: fhirBase, mediaType: FHIR_JSON },
} satisfies Record<string, Face>

const statusUrl = (face: Face, c: Context, id: string) => `${face.base(c)}/$viewdefinition-export/${id}`

/** The export routes of one face: /api (JSON, contract errors) or /fhir (FHIR JSON, OperationOutcome errors). */
export function viewDefinitionExportRouter(which: keyof typeof FACES) {
  const face: Face = FACES[which]
  const started = async (c: Context, body: z.infer<typeof RunParameters>, storedId?: number) => {
    const job = await startExport(ctxOf(c), body, c.req.url, storedId)
    const location = statusUrl(face, c, job.id)
    setResponseHeader(c, 'content-location', location)
    return sendJson(c, exportState(job, location, 'accepted'), 202, face.mediaType) as never
  }
  return createRouter()
    .openapi(kickoff('/$viewdefinition-export'), (c) => started(c, c.req.valid('json')))
    .openapi(kickoff('/ViewDefinition/$viewdefinition-export'), (c) => started(c, c.req.valid('json')))
    .openapi(kickoffStored, (c) => started(c, c.req.valid('json'), c.req.valid('param').id))
    .openapi(statusRoute, async (c) => {
      const id = c.req.valid('param').exportId
      const job = await exportStatus(ctxOf(c), id)
      if (job.status === 'failed') throw failure(job)
      if (job.status === 'running') {
        setResponseHeader(c, 'x-progress', exportProgress(job).text)
        setResponseHeader(c, 'retry-after', '2')
        return sendJson(c, exportState(job, statusUrl(face, c, id), 'in-progress'), 202, face.mediaType) as never
      }
      setResponseHeader(c, 'expires', new Date(job.expiresAt!).toUTCString())
      return sendJson(c, exportManifest(job, statusUrl(face, c, id)), 200, face.mediaType) as never
    })
    .openapi(deleteRoute, async (c) => {
      const id = c.req.valid('param').exportId
      await deleteExport(ctxOf(c), id)
      const cancelled = {
        resourceType: 'Parameters',
        parameter: [
          { name: 'exportId', valueString: id },
          { name: 'status', valueCode: 'cancelled' },
        ],
      }
      return sendJson(c, cancelled, 202, face.mediaType) as never
    })
    .openapi(fileRoute, async (c) => {
      const { exportId, file } = c.req.valid('param')
      const [index, format] = file.split('.')
      const out = await exportFile(ctxOf(c), exportId, Number(index), format)
      return new Response(out.body, {
        status: 200,
        headers: {
          'Content-Type': out.contentType,
          'Content-Disposition': `attachment; filename="${out.fileName.replace(/["\\\r\n]/g, '_')}"`,
          'Cache-Control': 'no-store',
        },
      }) as never
    })
}
