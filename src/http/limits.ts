import { type AppContext, appPath } from './context.ts'
import { setResponseHeader } from './response-headers.ts'

/** Which rate-limit bucket a path counts against (CONTRACT: production rules). */
function category(method: string, path: string): 'panels' | 'syncs' | 'views' {
  // The flat sync route and its nested alias (/api/panels/{panelId}/datasources/{id}/sync) share one limit.
  if (method === 'POST' && /^\/api\/(panels\/\d+\/)?datasources\/\d+\/sync/.test(path)) return 'syncs'
  if (path.startsWith('/api/views')) return 'views'
  return 'panels'
}

/**
 * Counts the request against its tenant's and its client address's limits and adds the tighter
 * one's RateLimit-* headers to the prepared response headers; past a limit it throws the 429
 * (with Retry-After).
 */
export function countRequest(c: AppContext) {
  const { config, rateLimiter } = c.get('deps')
  if (!config.rateLimitEnabled || c.req.method === 'OPTIONS') return
  const bucket = category(c.req.method, appPath(c))
  const rule = config.rateLimits[bucket]
  const tenant = c.get('claims')?.tenantId ?? c.req.query('tenantId') ?? config.devTenantId
  const ip =
    c.req.header('cf-connecting-ip') ?? c.req.header('x-forwarded-for')?.split(',')[0].trim() ?? c.env?.clientIp ?? 'unknown'
  const byTenant = rateLimiter.hit(`${bucket}:t:${tenant}`, rule)
  const byIp = rateLimiter.hit(`${bucket}:ip:${ip}`, rule)
  const tighter = Number(byTenant['RateLimit-Remaining']) <= Number(byIp['RateLimit-Remaining']) ? byTenant : byIp
  for (const [k, v] of Object.entries(tighter)) setResponseHeader(c, k, v)
}
