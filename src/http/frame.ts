import type { MiddlewareHandler } from 'hono'
import { stopping } from '../errors.ts'
import { logRequest } from './access-log.ts'
import { type AppEnv, type MakeDeps, requestIdOf } from './context.ts'
import { corsFor } from './cors.ts'
import { render } from './errors.ts'
import { applyResponseHeaders, type HeaderRecord, SECURITY_HEADERS } from './response-headers.ts'

/**
 * The first middleware of every request, one layer doing what each request needs around its
 * handler: the request id, the runtime's dependencies on `c.var.deps`, the prepared response
 * headers (security, X-Request-Id, CORS), CORS preflights, and the access log line. It is one
 * layer rather than five because each Hono middleware layer costs an async frame per request
 * (docs/performance.md).
 */
export const requestFrame = (makeDeps: MakeDeps): MiddlewareHandler<AppEnv> =>
  async function requestFrame(c, next) {
    const started = performance.now()
    const id = requestIdOf(c)
    c.set('requestId', id)
    // Shared deps come back as a value (Node, Deno): no promise to wait for.
    const made = makeDeps(c.env, c)
    const deps = made instanceof Promise ? await made : made
    c.set('deps', deps)
    const headers: HeaderRecord = { ...SECURITY_HEADERS, 'x-request-id': id }
    c.set('responseHeaders', headers)
    const cors = corsFor(deps.config)
    if (c.req.method === 'OPTIONS') {
      const answer = await cors.preflight(c, next)
      if (answer) c.res = answer
    } else {
      cors.addHeaders(headers, c.req.header('origin'))
      if (c.env?.stopping === true) c.res = render(c, stopping())
      else await next()
    }
    applyResponseHeaders(c, headers)
    logRequest(c, started)
  }
