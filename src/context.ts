import type { AccessOutcome } from './db/schema-access.ts'
import type { Deps } from './deps.ts'

/**
 * The one way a service context is made (for a request: src/http/auth.ts `ctxOf`; for work the
 * service does by itself: `systemContext`). Services receive a plain object, never a Hono
 * Context, and never the HTTP-only parts of the deps (the token verifier, the rate limiter).
 */

/** What a service tells the audit about the read (ids it resolved, rows it answered, the query). */
export interface AccessNote {
  panelId?: number
  viewId?: number
  dataSourceId?: number
  rowCount?: number
  query?: Record<string, unknown>
  /** The one row read, when the request reads one row by its `_id` (working the list): kept as `query.rowId`. */
  rowId?: number
  /** The request read no stored row-level data (a ViewDefinition run over resources it sent): no record. */
  readsNothingStored?: boolean
}

/**
 * The request's access record in the making, on `c.var.access` and `ctx.access` (the read audit:
 * src/modules/audit/audit.record.ts writes it).
 */
export interface AccessEntry extends AccessNote {
  /** Set by `streamAccess`: the stream writes the record, not the middleware. */
  deferred: boolean
  write(outcome: AccessOutcome, status: number, errorCode: string | null): Promise<void>
}

/** What services may use of the deps. */
export type ServiceDeps = Omit<Deps, 'tokens' | 'rateLimiter'>

/** Who acts: the tenant and user every service query is scoped by. */
export interface Scope {
  tenantId: string
  userId: string
  isAdmin: boolean
  /** The caller's groups (token `groups` claim; X-User-Groups with AUTH_DISABLED). */
  groups: readonly string[]
}

/** Request facts kept in change records (spec §6.1 metadata). */
export interface RequestMeta {
  requestId: string
  ipAddress?: string
  userAgent?: string
  source: 'api' | 'system' | 'web'
  /** The X-View-Password header, for password-protected views (never stored). */
  viewPassword?: string
}

/** What every service function receives: a plain object, never a Hono Context. */
export interface ServiceContext extends ServiceDeps {
  scope: Scope
  meta: RequestMeta
  /** The access record of an audited read route (src/modules/audit/audit.record.ts). */
  access?: AccessEntry
}

/**
 * A service context over `deps`: the deps are its prototype rather than copied into it (one
 * allocation of a few fields per request instead of a copy of every dependency; docs/performance.md).
 */
export function serviceContext(deps: ServiceDeps, scope: Scope, meta: RequestMeta, access?: AccessEntry): ServiceContext {
  const ctx = Object.create(deps) as ServiceContext
  ctx.scope = scope
  ctx.meta = meta
  if (access) ctx.access = access
  return ctx
}

/**
 * The context of work the service does by itself: scoped to one tenant, acting as `system` (so
 * every view owner is notified and change records say who acted).
 */
export function systemContext(deps: ServiceDeps, tenantId: string): ServiceContext {
  return serviceContext(
    deps,
    { tenantId, userId: 'system', isAdmin: true, groups: [] },
    { requestId: `system-${crypto.randomUUID()}`, source: 'system' },
  )
}
