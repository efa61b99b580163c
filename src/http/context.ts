import type { Context } from 'hono'
import { basePath } from 'hono/route'
import type { AccessEntry, RequestMeta } from '../context.ts'
import type { Deps } from '../deps.ts'
import type { Claims } from '../lib/token-verifier.ts'
import type { HeaderRecord } from './response-headers.ts'

/** The part of the request a runtime's `makeDeps` may use: Workers read `executionCtx.waitUntil`. */
export interface DepsRequest {
  readonly executionCtx: { waitUntil(work: Promise<unknown>): void }
}

/**
 * Builds (Workers) or hands out (Node, Deno) the deps of one request. `request.executionCtx`
 * throws where the runtime passed none (Node), so only an entry that has one reads it.
 */
export type MakeDeps = (env: unknown, request: DepsRequest) => Deps | Promise<Deps>

/**
 * Bindings a runtime may pass as the second argument of `fetch` (Workers env, Node's client IP).
 * `stopping`: the process is shutting down and this request came on a connection opened after
 * the signal, so it is refused with a 503 (docs/operations.md, Graceful shutdown).
 */
export type RuntimeBindings = { clientIp?: string; stopping?: boolean } & Record<string, unknown>

export type AppEnv = {
  Bindings: RuntimeBindings
  Variables: {
    deps: Deps
    requestId: string
    /** Verified token claims; undefined with AUTH_DISABLED. */
    claims?: Claims
    /** The response's headers, gathered before the handler (src/http/response-headers.ts). */
    responseHeaders: HeaderRecord
    /** Set by the audit middleware of routes that read rows. */
    access?: AccessEntry
    /** A request of the FHIR face (set by fhirGuard): its errors are OperationOutcomes. */
    fhirFace?: boolean
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

/** A sane incoming X-Request-Id, or a new one (CONTRACT: Errors); the frame echoes it. */
export function requestIdOf(c: Context): string {
  const incoming = c.req.header('x-request-id')
  return incoming && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID()
}

export function requestMeta(c: AppContext): RequestMeta {
  const forwarded = c.req.header('x-forwarded-for')?.split(',')[0]?.trim()
  return {
    requestId: c.get('requestId'),
    ipAddress: c.req.header('cf-connecting-ip') || forwarded || c.req.header('x-real-ip') || c.env?.clientIp || undefined,
    userAgent: c.req.header('user-agent') || undefined,
    source: 'api',
    viewPassword: c.req.header('x-view-password') ?? undefined,
  }
}
