import type { AppContext } from './context.ts'

/** One structured line per request: request id, method, path, status, duration (ms since `started`). */
export function logRequest(c: AppContext, started: number) {
  // c.get, not c.var: Hono builds a new object of all variables on every c.var access.
  const log = c.get('deps')?.log
  if (!log?.enabled('info')) return
  log.info('request', {
    requestId: c.get('requestId'),
    method: c.req.method,
    path: pathForLog(c.req.path),
    status: c.res.status,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
    tenantId: c.get('claims')?.tenantId,
  })
}

/**
 * A request's path as logs show it: the secret part of a notification URL (`/fhir-notify/{token}`,
 * which names and authorises a source) left out, as it is stored encrypted.
 */
export const pathForLog = (path: string) => path.replace(/\/fhir-notify\/[^/]+/, '/fhir-notify/[token]')
