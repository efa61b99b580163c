import { swaggerUI } from '@hono/swagger-ui'
import { OpenAPIHono } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { secureHeaders } from 'hono/secure-headers'
import { accessLog } from './http/access-log.ts'
import { jwtAuth } from './http/auth.ts'
import { jsonBody } from './http/body.ts'
import { type AppEnv, appPath, injectDeps, type MakeDeps, mountPath, requestId } from './http/context.ts'
import { corsFor } from './http/cors.ts'
import { defaultHook, notFound, onError } from './http/errors.ts'
import { rateLimit } from './http/limits.ts'
import { changesRouter } from './modules/changes/changes.routes.ts'
import { columnsRouter } from './modules/columns/columns.routes.ts'
import { datasourcesRouter } from './modules/datasources/datasources.routes.ts'
import { webhooksRouter } from './modules/datasources/webhooks.routes.ts'
import { formulasRouter } from './modules/formulas/formulas.routes.ts'
import { healthRouter } from './modules/health/health.routes.ts'
import { notificationsRouter } from './modules/notifications/notifications.routes.ts'
import { panelsRouter } from './modules/panels/panels.routes.ts'
import { exportRouter } from './modules/rows/rows.export.routes.ts'
import { importRouter } from './modules/rows/rows.import.routes.ts'
import { rowsRouter } from './modules/rows/rows.routes.ts'
import { viewsRouter } from './modules/views/views.routes.ts'

export const OPENAPI_INFO = {
  openapi: '3.0.0',
  info: {
    title: 'Panels API',
    version: '1.0.0',
    description:
      'Multi-tenant service for live patient panels: panels, data sources, columns, views, change tracking and notifications.',
  },
} as const

/** Paths whose bodies are not JSON or are checked by their own route (uploads, signed webhooks). */
const RAW_BODY_PATHS = [/^\/api\/webhooks\//, /^\/api\/datasources\/\d+\/file$/, /^\/api\/panels\/\d+\/import$/]

/**
 * The one app every runtime serves. `makeDeps` receives the runtime's bindings (a Worker's env,
 * Node's client address) and returns the dependencies for the request.
 */
export function createApp(makeDeps: MakeDeps) {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: defaultHook as never })

  app.use('*', requestId())
  app.use('*', injectDeps(makeDeps))
  app.use('*', accessLog())
  // Every middleware is built once here, not per request (docs/performance.md).
  app.use('*', secureHeaders({ crossOriginResourcePolicy: 'cross-origin' }))
  app.use('*', (c, next) => corsFor(c.get('deps').config)(c, next))
  const auth = jwtAuth()
  app.use('/api/*', (c, next) => (appPath(c).startsWith('/api/webhooks/') ? next() : auth(c, next)))
  app.use('/api/*', rateLimit())
  const json = jsonBody()
  app.use('/api/*', (c, next) => (RAW_BODY_PATHS.some((r) => r.test(appPath(c))) ? next() : json(c, next)))

  app.onError(onError)
  app.notFound(notFound)

  app.route('/', healthRouter)
  app.route('/api', panelsRouter)
  app.route('/api', datasourcesRouter)
  app.route('/api', webhooksRouter)
  app.route('/api', columnsRouter)
  app.route('/api', viewsRouter)
  app.route('/api', rowsRouter)
  app.route('/api', changesRouter)
  app.route('/api', notificationsRouter)
  app.route('/api', formulasRouter)
  app.route('/api', importRouter)
  app.route('/api', exportRouter)

  app.openAPIRegistry.registerComponent('securitySchemes', 'Bearer', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'HS256 JWT with tenantId and userId (or sub) claims; `npm run token` makes one.',
  })
  // Mounted under a host's path, the document names that path as its server so "try it" calls work.
  const docInfo = (c: Context) => (mountPath(c) ? { ...OPENAPI_INFO, servers: [{ url: mountPath(c) }] } : OPENAPI_INFO)
  app.doc('/openapi.json', docInfo)
  app.doc('/docs/json', docInfo)
  // Relative, so the UI at <mount>/docs loads <mount>/openapi.json.
  app.get('/docs', swaggerUI({ url: './openapi.json', title: 'Panels API' }))

  return app
}

export type App = ReturnType<typeof createApp>
