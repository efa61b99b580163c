import type { MiddlewareHandler } from 'hono'
import type { AppEnv } from './context.ts'

/** One structured line per request: request id, method, path, status, duration. */
export const accessLog = (): MiddlewareHandler<AppEnv> =>
  async function accessLog(c, next) {
    const started = performance.now()
    await next()
    const log = c.var.deps?.log
    if (!log?.enabled('info')) return
    log.info('request', {
      requestId: c.var.requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      tenantId: c.var.claims?.tenantId,
    })
  }
