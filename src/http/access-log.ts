import type { MiddlewareHandler } from 'hono'
import type { AppEnv } from './context.ts'

/** One structured line per request: request id, method, path, status, duration. */
export const accessLog = (): MiddlewareHandler<AppEnv> =>
  async function accessLog(c, next) {
    const started = performance.now()
    await next()
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
