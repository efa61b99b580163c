import type { Context, MiddlewareHandler } from 'hono'
import { basePath } from 'hono/route'
import type { Deps } from '../deps.ts'
import type { Claims } from './token-verifier.ts'

/** Who acts: the tenant and user every service query is scoped by. */
export interface Scope {
  tenantId: string
  userId: string
  isAdmin: boolean
}

/** Request facts kept in change records (spec §6.1 metadata). */
export interface RequestMeta {
  requestId: string
  ipAddress?: string
  userAgent?: string
  source: 'api' | 'system' | 'web'
}

/** What every service function receives: a plain object, never a Hono Context. */
export interface ServiceContext extends Deps {
  scope: Scope
  meta: RequestMeta
}

export type MakeDeps = (env: unknown) => Deps | Promise<Deps>

/** Bindings a runtime may pass as the second argument of `fetch` (Workers env, Node's client IP). */
export type RuntimeBindings = { clientIp?: string } & Record<string, unknown>

export type AppEnv = {
  Bindings: RuntimeBindings
  Variables: {
    deps: Deps
    requestId: string
    /** Verified token claims; undefined with AUTH_DISABLED. */
    claims?: Claims
  }
}

export type AppContext = Context<AppEnv>

/** Where a host app mounted this app (`host.route('/panels-api', app)`); '' when served at the root. */
export const mountPath = (c: Context) => {
  const base = basePath(c)
  return base === '/' ? '' : base
}

/** The request path relative to the mount point, for middleware that tests paths. */
export const appPath = (c: Context) => c.req.path.slice(mountPath(c).length)

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Reuses a sane incoming X-Request-Id or makes one, and echoes it (CONTRACT: Errors). */
export const requestId = (): MiddlewareHandler<AppEnv> =>
  async function requestId(c, next) {
    const incoming = c.req.header('x-request-id')
    const id = incoming && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID()
    c.set('requestId', id)
    c.header('X-Request-Id', id)
    await next()
  }

/** Puts the runtime's dependencies on `c.var.deps` (per request on Workers, shared elsewhere). */
export const injectDeps = (makeDeps: MakeDeps): MiddlewareHandler<AppEnv> =>
  async function injectDeps(c, next) {
    c.set('deps', await makeDeps(c.env))
    await next()
  }

export function requestMeta(c: AppContext): RequestMeta {
  const forwarded = c.req.header('x-forwarded-for')?.split(',')[0]?.trim()
  return {
    requestId: c.var.requestId,
    ipAddress: c.req.header('cf-connecting-ip') || forwarded || c.req.header('x-real-ip') || c.env?.clientIp || undefined,
    userAgent: c.req.header('user-agent') || undefined,
    source: 'api',
  }
}
