import type { AppContext } from './context.ts'

/** One structured line per request: request id, method, path, status, duration (ms since `started`). */
export function logRequest(c: AppContext, started: number) {
  // c.get, not c.var: Hono builds a new object of all variables on every c.var access.
  const log = c.get('deps')?.log
  if (!log?.enabled('info')) return
  log.info('request', {
    requestId: c.get('requestId'),
    method: c.req.method,
    path: c.req.path,
    status: c.res.status,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
    tenantId: c.get('claims')?.tenantId,
  })
}
