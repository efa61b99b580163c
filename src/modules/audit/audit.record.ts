import { sql } from 'drizzle-orm'
import type { MiddlewareHandler } from 'hono'
import type { AccessEntry, AccessNote, ServiceContext } from '../../context.ts'
import type { AccessAction, AccessOutcome } from '../../db/schema-access.ts'
import { AppError } from '../../errors.ts'
import { type AppContext, type AppEnv, requestMeta } from '../../http/context.ts'
import { StreamCancelled } from '../../http/push-stream.ts'
import { isoNow } from '../../lib/clock.ts'
import { type AccessRecord, writeAccess } from './audit.service.ts'

/**
 * The read audit of one request (issue 12 point 6; docs/audit.md). A route that returns row-level
 * data declares `middleware: auditAccess(action, target)`; the middleware runs before the route's
 * validation, so a 400 is recorded like a 403 or a 404, and writes the record after the handler,
 * awaited, before the response leaves. The route's service tells it what was read through
 * `noteAccess(ctx, …)`; a streamed answer hands the record over to `streamAccess`, which writes it
 * when the stream ends.
 */

/** What the route's path names: a panel (`panelId`), a view (`id`), or nothing (the body names it). */
type Target = 'panel' | 'view' | 'none'

/** The middleware of a route that reads rows of the `target` named by its path. */
export const auditAccess = (action: AccessAction, target: Target): MiddlewareHandler<AppEnv> =>
  async function auditAccess(c, next) {
    const deps = c.get('deps')
    if (!deps.config.audit.reads) return next()
    const entry = openEntry(c, action, target)
    c.set('access', entry)
    await next()
    if (entry.deferred || entry.readsNothingStored) return
    const status = c.res.status
    const errorCode = c.error instanceof AppError ? c.error.code : c.error ? 'INTERNAL_ERROR' : null
    if (status < 400) {
      // Fails closed: a read whose record cannot be written is a 500, not an unaudited answer.
      await entry.write('success', status, null)
      return
    }
    try {
      await entry.write(outcomeOf(status), status, errorCode)
    } catch (err) {
      deps.log.error('access record of a refused request not written', {
        requestId: c.get('requestId'),
        error: (err as Error)?.message,
      })
    }
  }

/** Tells the request's audit what the read touched; a no-op outside an audited route. */
export function noteAccess(ctx: ServiceContext, note: AccessNote) {
  if (ctx.access) Object.assign(ctx.access, note)
}

/**
 * For an answer streamed after the handler returned (exports): counts the rows of `batches` as the
 * writer takes them (at most `maxRows`, what the format writes) and returns `run`, which runs the
 * producer and then writes the record (success, cancelled by the client, or failed), awaited
 * within the stream's lifetime so a Worker still serves it. A failed write fails the stream.
 */
export function streamAccess<T>(ctx: ServiceContext, batches: AsyncIterable<T[]>, maxRows = Number.POSITIVE_INFINITY) {
  let rows = 0
  async function* counted() {
    for await (const batch of batches) {
      rows += batch.length
      yield batch
    }
  }
  const run = streamedAccess(ctx, () => Math.min(rows, maxRows))
  return { batches: ctx.access ? counted() : batches, run }
}

/**
 * For a streamed answer that counts its own rows (`rowCount()` when it ends): returns `run`, which
 * runs the producer and then writes the record (success, cancelled by the client, or failed),
 * awaited within the stream's lifetime. A failed write fails the stream.
 */
export function streamedAccess(ctx: ServiceContext, rowCount: () => number) {
  const entry = ctx.access
  if (!entry) return (produce: () => Promise<void>) => produce()
  entry.deferred = true
  const finish = (outcome: AccessOutcome, errorCode: string | null) => {
    entry.rowCount = rowCount()
    return entry.write(outcome, 200, errorCode)
  }
  return async (produce: () => Promise<void>) => {
    try {
      await produce()
    } catch (err) {
      const cancelled = err instanceof StreamCancelled
      await finish(cancelled ? 'cancelled' : 'failed', cancelled ? null : 'INTERNAL_ERROR').catch((e) =>
        ctx.log.error('access record of a stream not written', { requestId: ctx.meta.requestId, error: e?.message }),
      )
      throw err
    }
    await finish('success', null)
  }
}

// --- Internal helpers ---

function openEntry(c: AppContext, action: AccessAction, target: Target): AccessEntry {
  const deps = c.get('deps')
  const meta = requestMeta(c)
  const url = new URL(c.req.url)
  const caller = callerOf(c, url)
  const requested = target === 'none' ? undefined : idOf(c.req.param(target === 'panel' ? 'panelId' : 'id'))
  const entry: AccessEntry = {
    deferred: false,
    async write(outcome, status, errorCode) {
      // A refused request names only what the caller sent: its ids are looked up in the caller's
      // own tenant, never another's, and a tenant refusal keeps them in `path` only.
      if (outcome !== 'success' && errorCode !== 'TENANT_ACCESS_DENIED' && requested !== undefined && target !== 'none') {
        await resolveInTenant(c, entry, target, requested, caller.tenantId)
      }
      const record: AccessRecord = {
        at: isoNow(deps.clock),
        tenantId: caller.tenantId,
        userId: caller.userId,
        action,
        panelId: entry.panelId ?? null,
        viewId: entry.viewId ?? null,
        dataSourceId: entry.dataSourceId ?? null,
        rowCount: outcome === 'success' || outcome === 'cancelled' ? (entry.rowCount ?? 0) : 0,
        query: withRow(entry.query ?? queryOf(url), entry.rowId),
        path: url.pathname,
        requestId: meta.requestId,
        ip: meta.ipAddress ?? null,
        userAgent: meta.userAgent ?? null,
        outcome,
        status,
        errorCode,
      }
      await writeAccess(deps, record)
    },
  }
  return entry
}

/** The authenticated caller: the token's tenant and user (an admin acting for a user stays the admin). */
function callerOf(c: AppContext, url: URL) {
  const claims = c.get('claims')
  if (claims) return { tenantId: claims.tenantId, userId: claims.userId }
  // AUTH_DISABLED (development): tenant and user come from the request, as in ctxOf.
  const { config } = c.get('deps')
  return {
    tenantId: config.singleTenantId ?? url.searchParams.get('tenantId') ?? config.devTenantId,
    userId: url.searchParams.get('userId') ?? config.devUserId,
  }
}

const ID = /^[1-9]\d{0,15}$/
const idOf = (raw: string | undefined) => (raw && ID.test(raw) ? Number(raw) : undefined)

/** Query parameters whose values are JSON text, recorded parsed when they parse. */
const JSON_PARAMS = new Set(['filters', 'dateRange'])

/** The query as given (without the caller's tenantId/userId, which the record has). */
function queryOf(url: URL): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, value] of url.searchParams) {
    if (name === 'tenantId' || name === 'userId') continue
    let v: unknown = value
    if (JSON_PARAMS.has(name)) {
      try {
        v = JSON.parse(value)
      } catch {
        // recorded as sent
      }
    }
    out[name] = v
  }
  return out
}

/** The query with the one row read (`rowId`), when the request read one row. */
const withRow = (query: Record<string, unknown>, rowId: number | undefined) => (rowId === undefined ? query : { ...query, rowId })

async function resolveInTenant(c: AppContext, entry: AccessEntry, target: 'panel' | 'view', id: number, tenantId: string) {
  if (target === 'panel' ? entry.panelId !== undefined : entry.viewId !== undefined) return
  const { db } = c.get('deps')
  if (target === 'panel') {
    const rows = await db.all<{ id: number }>(sql`SELECT id FROM panels WHERE id = ${id} AND tenant_id = ${tenantId}`)
    if (rows.length > 0) entry.panelId = id
    return
  }
  const rows = await db.all<{ panel_id: number }>(sql`SELECT panel_id FROM views WHERE id = ${id} AND tenant_id = ${tenantId}`)
  if (rows.length === 0) return
  entry.viewId = id
  entry.panelId = Number(rows[0].panel_id)
}

function outcomeOf(status: number): AccessOutcome {
  if (status === 403) return 'denied'
  if (status === 404) return 'not_found'
  if (status >= 500) return 'failed'
  return 'invalid'
}
