import type { MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import type { Config } from '../config.ts'
import type { AppEnv } from './context.ts'

const ALLOW_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id']
const ALLOW_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const EXPOSE_HEADERS = [
  'X-Request-Id',
  'X-Total-Count',
  'Link',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
]

/**
 * CORS (CONTRACT: production rules) for one configuration, built once per `config` object.
 * Preflights (OPTIONS) go through hono/cors unchanged. Other requests get the same headers hono/cors
 * would give (Allow-Origin, Expose-Headers, Vary: Origin for an origin list), but set after the
 * handler: hono/cors touches `c.res` before the handler, which makes Hono merge two responses and
 * turns @hono/node-server's string response into a stream on every request (docs/performance.md).
 */
export function corsFor(config: Pick<Config, 'corsOrigins'>): MiddlewareHandler<AppEnv> {
  const built = cache.get(config)
  if (built) return built
  const any = config.corsOrigins.includes('*')
  const origins = config.corsOrigins
  const preflight = cors({
    origin: any ? '*' : origins,
    allowHeaders: ALLOW_HEADERS,
    allowMethods: ALLOW_METHODS,
    exposeHeaders: EXPOSE_HEADERS,
    maxAge: 600,
  })
  const expose = EXPOSE_HEADERS.join(',')
  const middleware: MiddlewareHandler<AppEnv> = async function corsHeaders(c, next) {
    if (c.req.method === 'OPTIONS') return preflight(c, next)
    await next()
    const headers = c.res.headers
    if (any) headers.set('Access-Control-Allow-Origin', '*')
    else {
      const origin = c.req.header('origin')
      if (origin && origins.includes(origin)) headers.set('Access-Control-Allow-Origin', origin)
      headers.append('Vary', 'Origin')
    }
    headers.set('Access-Control-Expose-Headers', expose)
  }
  cache.set(config, middleware)
  return middleware
}

const cache = new WeakMap<object, MiddlewareHandler<AppEnv>>()
