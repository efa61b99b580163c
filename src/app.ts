import { swaggerUI } from '@hono/swagger-ui'
import { OpenAPIHono } from '@hono/zod-openapi'
import { secureHeaders } from 'hono/secure-headers'
import { accessLog } from './http/access-log.ts'
import { jwtAuth } from './http/auth.ts'
import { jsonBody } from './http/body.ts'
import { type AppEnv, injectDeps, type MakeDeps, requestId } from './http/context.ts'
import { corsFor } from './http/cors.ts'
import { defaultHook, notFound, onError } from './http/errors.ts'
import { rateLimit } from './http/limits.ts'
import { changesRouter } from './modules/changes/changes.routes.ts'
import { columnsRouter } from './modules/columns/columns.routes.ts'
import { datasourcesRouter } from './modules/datasources/datasources.routes.ts'
import { healthRouter } from './modules/health/health.routes.ts'
import { notificationsRouter } from './modules/notifications/notifications.routes.ts'
import { panelsRouter } from './modules/panels/panels.routes.ts'
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
  app.use('/api/*', (c, next) => (c.req.path.startsWith('/api/webhooks/') ? next() : auth(c, next)))
  app.use('/api/*', rateLimit())
  app.use('/api/*', jsonBody(RAW_BODY_PATHS))

  app.onError(onError)
  app.notFound(notFound)

  app.route('/', healthRouter)
  app.route('/api', panelsRouter)
  app.route('/api', datasourcesRouter)
  app.route('/api', columnsRouter)
  app.route('/api', viewsRouter)
  app.route('/api', changesRouter)
  app.route('/api', notificationsRouter)

  app.openAPIRegistry.registerComponent('securitySchemes', 'Bearer', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'HS256 JWT with tenantId and userId (or sub) claims; `npm run token` makes one.',
  })
  app.doc('/openapi.json', OPENAPI_INFO)
  app.doc('/docs/json', OPENAPI_INFO)
  app.get('/docs', swaggerUI({ url: '/openapi.json', title: 'Panels API' }))

  return app
}

export type App = ReturnType<typeof createApp>
