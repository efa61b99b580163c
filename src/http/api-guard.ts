import type { MiddlewareHandler } from 'hono'
import { authenticate } from './auth.ts'
import { readJsonBody } from './body.ts'
import { type AppEnv, appPath } from './context.ts'
import { countRequest } from './limits.ts'

/** Paths whose bodies are not JSON or are checked by their own route (uploads, signed webhooks). */
const RAW_BODY_PATHS = [/^\/api\/webhooks\//, /^\/api\/datasources\/\d+\/file$/, /^\/api\/panels\/\d+\/import$/]

/**
 * The checks every /api request passes before its route, in the contract's order: the bearer token
 * (401; webhooks sign their bodies instead), the rate limits (429), the JSON body (413, 415, 400).
 * One middleware layer calling the three steps, so a cached token and a read cost no promise.
 */
export const apiGuard = (): MiddlewareHandler<AppEnv> =>
  async function apiGuard(c, next) {
    const path = appPath(c)
    if (!path.startsWith('/api/webhooks/')) {
      const verifying = authenticate(c)
      if (verifying) await verifying
    }
    countRequest(c)
    if (!RAW_BODY_PATHS.some((r) => r.test(path))) {
      const reading = readJsonBody(c)
      if (reading) await reading
    }
    await next()
  }
