import { createRoute, z } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { bearer, createRouter, errorResponses, IdParam } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import { ExportQuery } from './rows.export.schemas.ts'
import { contentDisposition, exportView } from './rows.export.ts'

const binary = { schema: { type: 'string' as const, format: 'binary' } }

const exportRoute = createRoute({
  method: 'get',
  path: '/views/{id}/export',
  tags: ['Rows'],
  summary: 'Download every row of a view as csv, json, excel (xlsx) or pdf',
  description:
    'ExportConfig as query parameters; `dateRange` as `dateRange[start]`/`dateRange[end]`/`dateRange[column]` or as JSON. ' +
    'Streams all matching rows (the view’s filters and columns, the panel’s cohort rule), in the view’s order (as `GET /views/{id}/rows` pages them), up to `maxRows`; ' +
    '`compression=gzip` answers a .gz file. A published view of another user whose `publishConfig.allowDownload` is false is a 403. See docs/import-export.md.',
  security: bearer,
  middleware: auditAccess('export', 'view'),
  request: { params: IdParam, query: ExportQuery },
  responses: {
    200: {
      description: 'The file, as an attachment (Content-Disposition)',
      headers: { 'Content-Disposition': { schema: { type: 'string' } } },
      content: {
        'application/json': { schema: z.array(z.record(z.string(), z.unknown())).openapi('ExportedRows') },
        'text/csv': binary,
        'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': binary,
        'application/pdf': binary,
        'application/gzip': binary,
      },
    },
    ...errorResponses,
  },
})

export const exportRouter = createRouter().openapi(exportRoute, async (c) => {
  const query = c.req.valid('query')
  const download = await exportView(ctxOf(c, query), c.req.valid('param').id, query)
  return new Response(download.body, {
    status: 200,
    headers: {
      'Content-Type': download.contentType,
      'Content-Disposition': contentDisposition(download.filename),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    },
  }) as never
})
