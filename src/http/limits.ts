import type { MiddlewareHandler } from 'hono'
import { type AppEnv, appPath } from './context.ts'

/** Which rate-limit bucket a path counts against (CONTRACT: production rules). */
function category(method: string, path: string): 'panels' | 'syncs' | 'views' {
  if (method === 'POST' && /^\/api\/datasources\/\d+\/sync/.test(path)) return 'syncs'
  if (path.startsWith('/api/views')) return 'views'
  return 'panels'
}

/** Per-tenant and per-IP limits with RateLimit-* headers; 429 with Retry-After past the limit. */
export const rateLimit = (): MiddlewareHandler<AppEnv> =>
  async function rateLimit(c, next) {
    const { config, rateLimiter } = c.get('deps')
    if (!config.rateLimitEnabled || c.req.method === 'OPTIONS') return next()
    const bucket = category(c.req.method, appPath(c))
    const rule = config.rateLimits[bucket]
    const tenant = c.get('claims')?.tenantId ?? c.req.query('tenantId') ?? config.devTenantId
    const ip =
      c.req.header('cf-connecting-ip') ?? c.req.header('x-forwarded-for')?.split(',')[0].trim() ?? c.env?.clientIp ?? 'unknown'
    const byTenant = rateLimiter.hit(`${bucket}:t:${tenant}`, rule)
    const byIp = rateLimiter.hit(`${bucket}:ip:${ip}`, rule)
    const tighter = Number(byTenant['RateLimit-Remaining']) <= Number(byIp['RateLimit-Remaining']) ? byTenant : byIp
    await next()
    for (const [k, v] of Object.entries(tighter)) c.res.headers.set(k, v)
  }
