import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, PanelIdParam, TenantQuery } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import { readImportRequest } from './rows.import.request.ts'
import { ImportConfigSchema, ImportJsonBody, ImportReport } from './rows.import.schemas.ts'
import { importIntoPanel } from './rows.import.ts'

const importRoute = createRoute({
  method: 'post',
  path: '/panels/{panelId}/import',
  tags: ['Rows'],
  summary: 'Import rows into a panel from a csv, xlsx or json file, or from JSON rows',
  description:
    'multipart/form-data with the file in `file` and the ImportConfig as JSON in `config`, or a JSON body `{ config, rows }`. ' +
    'Rows are stored as records of the panel’s `import` data source (created on the first import). A file that fails as a whole ' +
    '(config, format, unreadable, missing mapped fields) is a 400 and changes nothing; over `validation.maxFileSize` or IMPORT_MAX_BYTES/IMPORT_MAX_ROWS a 413. ' +
    'Otherwise rows with problems are rejected and reported by their 1-based data row, the others imported. See docs/import-export.md.',
  security: bearer,
  middleware: auditAccess('import', 'panel'),
  request: {
    params: PanelIdParam,
    query: TenantQuery,
    body: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object' as const,
            properties: {
              file: { type: 'string' as const, format: 'binary' },
              config: { type: 'string' as const, description: 'The ImportConfig as JSON' },
            },
            required: ['file', 'config'],
          },
        },
        'application/json': { schema: { $ref: '#/components/schemas/ImportRows' } },
      },
    },
  },
  responses: {
    200: { description: 'The import report', content: { 'application/json': { schema: ImportReport } } },
    ...errorResponses,
  },
})

export const importRouter = createRouter().openapi(importRoute, async (c) => {
  const deps = c.get('deps')
  const input = await readImportRequest(c.req.raw, deps.config.importLimits.maxBytes)
  const ctx = ctxOf(c, c.req.valid('query'), input.caller)
  return sendJson(c, await importIntoPanel(ctx, c.req.valid('param').panelId, input), 200)
})

importRouter.openAPIRegistry.register('ImportConfig', ImportConfigSchema)
importRouter.openAPIRegistry.register('ImportRows', ImportJsonBody)
