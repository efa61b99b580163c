import type { MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import type { Config } from '../config.ts'
import type { AppEnv } from './context.ts'
import type { HeaderRecord } from './response-headers.ts'

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
  'Server-Timing',
]

export interface CorsPolicy {
  /** Answers a preflight (OPTIONS) with hono/cors. */
  preflight: MiddlewareHandler<AppEnv>
  /** Adds the headers hono/cors gives a non-preflight request from `origin` to the prepared headers. */
  addHeaders(headers: HeaderRecord, origin: string | undefined): void
}

/**
 * CORS (CONTRACT: production rules) for one configuration, built once per `config` object.
 * Preflights go through hono/cors unchanged. Other requests get the same headers hono/cors would
 * give (Allow-Origin, Expose-Headers, Vary: Origin for an origin list), written into the request's
 * prepared headers before the handler (src/http/response-headers.ts) rather than onto the response.
 */
export function corsFor(config: Pick<Config, 'corsOrigins'>): CorsPolicy {
  const built = cache.get(config)
  if (built) return built
  const any = config.corsOrigins.includes('*')
  const origins = config.corsOrigins
  const expose = EXPOSE_HEADERS.join(',')
  const policy: CorsPolicy = {
    preflight: cors({
      origin: any ? '*' : origins,
      allowHeaders: ALLOW_HEADERS,
      allowMethods: ALLOW_METHODS,
      exposeHeaders: EXPOSE_HEADERS,
      maxAge: 600,
    }),
    addHeaders(headers, origin) {
      if (any) headers['access-control-allow-origin'] = '*'
      else {
        if (origin && origins.includes(origin)) headers['access-control-allow-origin'] = origin
        headers.vary = 'Origin'
      }
      headers['access-control-expose-headers'] = expose
    },
  }
  cache.set(config, policy)
  return policy
}

const cache = new WeakMap<object, CorsPolicy>()
