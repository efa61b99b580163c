import { and, desc, eq, gte, lt, type SQL, sql } from 'drizzle-orm'
import { dropCachedView } from '../../cache/view-key.ts'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import { type AccessAction, type AccessOutcome, accessRecords } from '../../db/schema-access.ts'
import type { Deps } from '../../deps.ts'
import { forbidden } from '../../errors.ts'
import { type AccessPageDto, type ListAccessInput, toAccessDto } from './audit.schemas.ts'

/** One access record as written (docs/audit.md "Record"). */
export interface AccessRecord {
  at: string
  tenantId: string
  userId: string
  action: AccessAction
  panelId: number | null
  viewId: number | null
  dataSourceId: number | null
  rowCount: number
  query: Record<string, unknown>
  path: string
  requestId: string
  ip: string | null
  userAgent: string | null
  outcome: AccessOutcome
  status: number
  errorCode: string | null
}

/**
 * `accessedAt` of a view moves at most once per this many seconds (docs/audit.md "accessedAt"):
 * every read checks it in the same batch as its record, but only one read a minute per view
 * writes the view's page and drops its cached row.
 */
export const ACCESSED_AT_STEP_SECONDS = 60

/** Actions that read a view's rows and so set its `accessedAt`. */
const READS: ReadonlySet<AccessAction> = new Set(['read', 'export', 'stream'])

/**
 * Writes one access record, awaited by the request that caused it (never fire-and-forget, which a
 * Worker would drop). A successful read of a view also moves the view's `accessedAt`, in the same
 * batch, when the stored one is older than ACCESSED_AT_STEP_SECONDS. Plain SQL: every audited
 * read runs this (docs/performance.md).
 */
export async function writeAccess(deps: Deps, r: AccessRecord): Promise<void> {
  const insert = deps.db.run(sql`
    INSERT INTO access_records (at, tenant_id, user_id, action, panel_id, view_id, data_source_id, row_count, query, path,
                                request_id, ip, user_agent, outcome, status, error_code)
    VALUES (${r.at}, ${r.tenantId}, ${r.userId}, ${r.action}, ${r.panelId}, ${r.viewId}, ${r.dataSourceId}, ${r.rowCount},
            ${JSON.stringify(r.query)}, ${r.path}, ${r.requestId}, ${r.ip}, ${r.userAgent}, ${r.outcome}, ${r.status},
            ${r.errorCode})`)
  if (r.viewId === null || r.outcome !== 'success' || !READS.has(r.action)) {
    await insert
    return
  }
  const stale = new Date(Date.parse(r.at) - ACCESSED_AT_STEP_SECONDS * 1000).toISOString()
  const [, touched] = await deps.db.batch([
    insert,
    deps.db.run(sql`
      UPDATE views SET accessed_at = ${r.at}
      WHERE id = ${r.viewId} AND tenant_id = ${r.tenantId} AND (accessed_at IS NULL OR accessed_at <= ${stale})`),
  ])
  if (rowsAffected(touched) > 0) await dropCachedView(deps.cache, r.tenantId, r.viewId)
}

/**
 * `GET /api/audit` (tenant admins only): the tenant's access records, newest first, filtered by
 * user, panel, view, action and a time range (`from` inclusive, `to` exclusive), paged like the
 * change feed (CONTRACT: Changes).
 */
export async function listAccess(ctx: ServiceContext, q: ListAccessInput): Promise<AccessListing> {
  if (!ctx.scope.isAdmin) throw forbidden('Only tenant admins (role admin) can read the audit log')
  const conditions: SQL[] = [eq(accessRecords.tenantId, ctx.scope.tenantId)]
  if (q.user !== undefined) conditions.push(eq(accessRecords.userId, q.user))
  if (q.panelId !== undefined) conditions.push(eq(accessRecords.panelId, q.panelId))
  if (q.viewId !== undefined) conditions.push(eq(accessRecords.viewId, q.viewId))
  if (q.action !== undefined) conditions.push(eq(accessRecords.action, q.action))
  if (q.from !== undefined) conditions.push(gte(accessRecords.at, q.from))
  if (q.to !== undefined) conditions.push(lt(accessRecords.at, q.to))
  const where = and(...conditions)
  const limit = q.limit
  const offset = q.offset ?? ((q.page ?? 1) - 1) * limit
  const [rows, [{ total }]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(accessRecords)
      .where(where)
      .orderBy(desc(accessRecords.at), desc(accessRecords.id))
      .limit(limit)
      .offset(offset),
    ctx.db.select({ total: sql<number>`count(*)` }).from(accessRecords).where(where),
  ])
  return { records: rows.map(toAccessDto), total: Number(total), hasMore: offset + rows.length < Number(total), offset, limit }
}

/** A page of records with where it starts, for the FHIR Bundle's links. */
export type AccessListing = AccessPageDto & { offset: number; limit: number }

/** Records deleted per statement of the retention step. */
const PRUNE_BATCH = 1000
/** Statements per scheduler step, so one step stays short however much expired. */
const PRUNE_MAX_BATCHES = 20

/**
 * The retention step (AUDIT_RETENTION_DAYS, run by the scheduler): deletes records older than the
 * retention, oldest first, in batches of PRUNE_BATCH ids, at most PRUNE_MAX_BATCHES per call; the
 * next step goes on. It walks the primary key from the lowest id (ids grow with `at`), so it needs
 * no index on `at` across tenants and stops at the first batch holding a record still kept.
 */
export async function pruneAccessRecords(deps: Deps, now: Date = deps.clock.now()): Promise<number> {
  const cutoff = new Date(now.getTime() - deps.config.audit.retentionDays * 86_400_000).toISOString()
  let deleted = 0
  for (let i = 0; i < PRUNE_MAX_BATCHES; i++) {
    const result = await deps.db.run(sql`
      DELETE FROM access_records WHERE id IN (
        SELECT id FROM access_records ORDER BY id LIMIT ${PRUNE_BATCH}
      ) AND at < ${cutoff}`)
    const n = rowsAffected(result)
    deleted += n
    if (n < PRUNE_BATCH) break
  }
  return deleted
}
