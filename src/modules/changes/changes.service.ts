import { and, desc, eq, gte, inArray, isNull, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { type ChangeAction, type ChangeEntity, changes, type FieldChanges, panels, views } from '../../db/schema.ts'
import { isoNow } from '../../lib/clock.ts'
import { type ChangePageDto, type ListChangesInput, toChangeDto } from './changes.schemas.ts'

export interface ChangeEvent {
  panelId: number | SQL
  entityType: ChangeEntity
  entityId: number | SQL
  action: ChangeAction
  changes: FieldChanges
}

/**
 * The insert of one change record, to run in the caller's `db.batch` with the change itself
 * (spec §6.1; CONTRACT: Changes). Ids not known before the batch may be SQL (`last_insert_rowid()`).
 */
export function changeInsert(ctx: ServiceContext, event: ChangeEvent) {
  const { userAgent, ipAddress, source } = ctx.meta
  const metadata = { source, ...(userAgent ? { userAgent } : {}), ...(ipAddress ? { ipAddress } : {}) }
  // Plain SQL, not the insert builder: every write of the service runs this (docs/performance.md).
  return ctx.db.run(sql`
    INSERT INTO changes (tenant_id, user_id, panel_id, entity_type, entity_id, action, changes, metadata, created_at)
    VALUES (${ctx.scope.tenantId}, ${ctx.scope.userId}, ${event.panelId}, ${event.entityType}, ${event.entityId},
            ${event.action}, ${JSON.stringify(event.changes)}, ${JSON.stringify(metadata)}, ${isoNow(ctx.clock)})`)
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null)

/** Field diffs `{ field: { oldValue, newValue } }` of the fields that differ. */
export function diffFields<T extends Record<string, unknown>>(
  before: Partial<T>,
  after: Partial<T>,
  fields: readonly (keyof T & string)[],
): FieldChanges {
  const out: FieldChanges = {}
  for (const f of fields) {
    if (!(f in after) || same(before[f], after[f])) continue
    out[f] = { oldValue: before[f] ?? null, newValue: after[f] ?? null }
  }
  return out
}

/** The fields of a created entity as `{ field: { newValue } }`. */
export function createdFields<T extends Record<string, unknown>>(entity: T, fields: readonly (keyof T & string)[]): FieldChanges {
  const out: FieldChanges = {}
  for (const f of fields) if (entity[f] !== undefined) out[f] = { newValue: entity[f] }
  return out
}

/**
 * The ids of the panels whose changes the caller may read (CONTRACT: Changes): the caller's own
 * panels, soft-deleted ones included (their change records stay), and the live panels of the
 * tenant that have a published view. One uncorrelated subquery, evaluated once by SQLite.
 */
function visiblePanelIds(ctx: ServiceContext) {
  const { tenantId, userId } = ctx.scope
  const own = ctx.db
    .select({ id: panels.id })
    .from(panels)
    .where(and(eq(panels.tenantId, tenantId), eq(panels.userId, userId)))
  const published = ctx.db
    .select({ id: views.panelId })
    .from(views)
    .innerJoin(panels, and(eq(panels.id, views.panelId), eq(panels.tenantId, tenantId), isNull(panels.deletedAt)))
    .where(and(eq(views.tenantId, tenantId), eq(views.isPublished, true)))
  return own.union(published)
}

/**
 * The change feed `GET /api/changes/panels`: newest first (createdAt DESC, id DESC), filtered and
 * paged in SQL, always within the caller's tenant and the panels they may see. `since` is inclusive
 * and already normalised to the stored timestamp form by the query schema.
 */
export async function listChanges(ctx: ServiceContext, q: ListChangesInput): Promise<ChangePageDto> {
  const conditions: SQL[] = [eq(changes.tenantId, ctx.scope.tenantId), inArray(changes.panelId, visiblePanelIds(ctx))]
  if (q.since !== undefined) conditions.push(gte(changes.createdAt, q.since))
  if (q.panelId !== undefined) conditions.push(eq(changes.panelId, q.panelId))
  if (q.entityType !== undefined) conditions.push(eq(changes.entityType, q.entityType))
  if (q.action !== undefined) conditions.push(eq(changes.action, q.action))
  const where = and(...conditions)
  const limit = q.limit
  const offset = q.offset ?? ((q.page ?? 1) - 1) * limit
  const [rows, [{ total }]] = await ctx.db.batch([
    ctx.db.select().from(changes).where(where).orderBy(desc(changes.createdAt), desc(changes.id)).limit(limit).offset(offset),
    ctx.db.select({ total: sql<number>`count(*)` }).from(changes).where(where),
  ])
  return { changes: rows.map(toChangeDto), total, hasMore: offset + rows.length < total }
}
