import { OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { apiGuard } from './http/api-guard.ts'
import { type AppEnv, type MakeDeps, mountPath } from './http/context.ts'
import { mountDocs } from './http/docs-assets.ts'
import { defaultHook, notFound, onError } from './http/errors.ts'
import { fhirGuard } from './http/fhir-guard.ts'
import { requestFrame } from './http/frame.ts'
import { OPENAPI_INFO } from './http/openapi-info.ts'
import { auditRouter } from './modules/audit/audit.routes.ts'
import { changesRouter } from './modules/changes/changes.routes.ts'
import { columnsRouter } from './modules/columns/columns.routes.ts'
import { datasourcesRouter } from './modules/datasources/datasources.routes.ts'
import { fhirNotifyRouter } from './modules/datasources/fhir-notify.routes.ts'
import { webhooksRouter } from './modules/datasources/webhooks.routes.ts'
import { eventsRouter } from './modules/events/events.routes.ts'
import { fhirRouter } from './modules/fhir/fhir.routes.ts'
import { formulasRouter } from './modules/formulas/formulas.routes.ts'
import { healthRouter } from './modules/health/health.routes.ts'
import { notificationsRouter } from './modules/notifications/notifications.routes.ts'
import { panelsRouter } from './modules/panels/panels.routes.ts'
import { exportRouter } from './modules/rows/rows.export.routes.ts'
import { importRouter } from './modules/rows/rows.import.routes.ts'
import { rowsRouter } from './modules/rows/rows.routes.ts'
import { subscriptionsRouter } from './modules/subscriptions/subscriptions.routes.ts'
import { viewDefinitionExportRouter } from './modules/viewdefinitions/viewdefinitions.export.routes.ts'
import { panelViewDefinitionRouter } from './modules/viewdefinitions/viewdefinitions.panel.routes.ts'
import { fhirViewDefinitionsRouter, viewDefinitionsRouter } from './modules/viewdefinitions/viewdefinitions.routes.ts'
import { viewsRouter } from './modules/views/views.routes.ts'
import { commentsRouter } from './modules/work/comments.routes.ts'
import { workRouter } from './modules/work/work.routes.ts'

/**
 * The one app every runtime serves. `makeDeps` receives the runtime's bindings (a Worker's env,
 * Node's client address) and returns the dependencies for the request.
 */
export function createApp(makeDeps: MakeDeps) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: defaultHook as never })

  // Two middleware layers, each built once here (docs/performance.md): the frame around every
  // request (id, deps, response headers, CORS, access log) and the guard of /api (auth, limits, body).
  app.use('*', requestFrame(makeDeps))
  app.use('/api/*', apiGuard())
  // The FHIR face: the same token, limits and body checks; its errors are OperationOutcomes.
  app.use('/fhir/*', fhirGuard())

  app.onError(onError)
  app.notFound(notFound)

  app.route('/', healthRouter)
  app.route('/api', panelsRouter)
  app.route('/api', datasourcesRouter)
  app.route('/api', webhooksRouter)
  app.route('/api', columnsRouter)
  app.route('/api', viewsRouter)
  // Right after the views: it serves GET /views/{id}/rows, which the document lists with them.
  app.route('/api', rowsRouter)
  app.route('/api', workRouter)
  app.route('/api', commentsRouter)
  app.route('/api', changesRouter)
  app.route('/api', notificationsRouter)
  app.route('/api', formulasRouter)
  app.route('/api', importRouter)
  app.route('/api', exportRouter)
  app.route('/api', auditRouter)
  app.route('/api', viewDefinitionsRouter)
  app.route('/api', viewDefinitionExportRouter('api'))
  app.route('/api', eventsRouter)
  app.route('/api', panelViewDefinitionRouter)
  app.route('/api', subscriptionsRouter)
  app.route('/fhir', fhirRouter)
  app.route('/fhir', fhirViewDefinitionsRouter)
  app.route('/fhir', viewDefinitionExportRouter('fhir'))
  app.route('/', fhirNotifyRouter)

  app.openAPIRegistry.registerComponent('securitySchemes', 'Bearer', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'HS256 JWT with tenantId and userId (or sub) claims; `npm start` prints one in development, `npm run token` makes one.',
  })
  // Mounted under a host's path, the document names that path as its server so "try it" calls work.
  const docInfo = (c: Context) => (mountPath(c) ? { ...OPENAPI_INFO, servers: [{ url: mountPath(c) }] } : OPENAPI_INFO)
  app.doc('/openapi.json', docInfo)
  app.doc('/docs/json', docInfo)
  // Swagger UI with its script and stylesheet served from here, not from a CDN (offline appliances).
  mountDocs(app)

  return app
}

export type App = ReturnType<typeof createApp>
