import { createRoute } from '@hono/zod-openapi'
import { sendJson, setResponseHeader } from '../../http/response-headers.ts'
import { createRouter } from '../../http/router.ts'
import { HealthReport } from './health.schemas.ts'
import { checkHealth } from './health.service.ts'

const report = (description: string) => ({ description, content: { 'application/json': { schema: HealthReport } } })

const healthRoute = (path: string, summary: string) =>
  createRoute({
    method: 'get',
    path,
    tags: ['Health'],
    summary,
    description:
      'No token needed. Checks the database and the cache, each within 2 s. A failing cache answers 200 with `status: "degraded"`; a failing database answers 503 with `status: "unhealthy"`.',
    responses: {
      200: report('Healthy, or degraded when the cache is down'),
      503: report('Unhealthy: the database is down'),
    },
  })

const routes = [
  healthRoute('/health', 'Service health: database and cache checks, uptime'),
  healthRoute('/healthz', 'Service health (alias of /health)'),
  healthRoute('/liveness', 'Service health (alias of /health)'),
]

export const healthRouter = createRouter()

for (const route of routes) {
  healthRouter.openapi(route, async (c) => {
    const { httpStatus, report } = await checkHealth(c.get('deps'))
    setResponseHeader(c, 'Cache-Control', 'no-store')
    return sendJson(c, report, httpStatus)
  })
}
