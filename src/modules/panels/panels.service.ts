import { and, asc, desc, eq, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { insertedId, runBatch } from '../../db/client.ts'
import { panels } from '../../db/schema.ts'
import { notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import type { ListedPage } from '../../lib/paging.ts'
import { panelEvaluationStatements } from '../../rowstore/membership.ts'
import { panelWorkRemoval } from '../../rowstore/work-sql.ts'
import { changeInsert, createdFields, diffFields } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import type { CreatePanelInput, ListPanelsInput, PanelDto, PanelRow, UpdatePanelInput } from './panels.schemas.ts'
import { toPanelDto } from './panels.schemas.ts'

const panelKey = (id: number) => `panel:${id}`
/** The current version of an owner's panel lists; deleted on every write of that owner's panels. */
const listVersionKey = (ownerId: string) => `panels:lv:${encodeURIComponent(ownerId)}`
const listKey = (ownerId: string, version: string, q: ListPanelsInput) =>
  `panels:list:${encodeURIComponent(ownerId)}:${version}:${encodeURIComponent(JSON.stringify([q.page, q.limit, q.sort, q.order, q.search]))}`
const TRACKED = ['name', 'description', 'metadata', 'cohortRule'] as const

/** Who may reach a panel: its owner, or an admin of the tenant (CONTRACT: Ownership). */
const mayAccess = (ctx: ServiceContext, ownerId: string) => ctx.scope.isAdmin || ownerId === ctx.scope.userId

const livePanel = (ctx: ServiceContext, id: number) =>
  and(eq(panels.id, id), eq(panels.tenantId, ctx.scope.tenantId), isNull(panels.deletedAt))

/**
 * A live panel of the caller's tenant whoever owns it, through the tenant-keyed cache. For other
 * services that show a panel's name next to something the caller may read (a published view).
 */
export function findPanel(ctx: ServiceContext, id: number): Promise<PanelDto | undefined> {
  return ctx.cache.wrap(ctx.scope.tenantId, panelKey(id), async () => {
    const [row] = await ctx.db.select().from(panels).where(livePanel(ctx, id)).limit(1)
    return row ? toPanelDto(row) : undefined
  })
}

/**
 * The panel as the caller may see it; another tenant's, another owner's or a deleted panel is a
 * 404 that reveals nothing.
 */
export async function getPanel(ctx: ServiceContext, id: number): Promise<PanelDto> {
  const panel = await findPanel(ctx, id)
  if (!panel || !mayAccess(ctx, panel.userId)) throw notFound('Panel', id, ctx.scope.tenantId)
  return panel
}

/** Loads a panel the caller owns, for services of resources under it (data sources, columns, views). */
export const requirePanel = getPanel

export interface PanelPage {
  items: PanelDto[]
  /**
   * Set when the caller gave any list parameter (page, limit, sort, order, search), for
   * X-Total-Count and Link (CONTRACT: Panel lists); without page/limit it is the whole list, one page.
   */
  page?: ListedPage
}

/**
 * Panels of the caller's tenant and user, newest first (CONTRACT: Panel lists), cached per
 * (tenant, owner, query) under the owner's list version. Every panel write of that owner deletes
 * the version (`invalidateLists`), so a list cached before a write is never served after it: a
 * reader that raced the write stored its result under the old version, which nothing reads any
 * more. The version is settled before the database is read, so a fresh version never labels data
 * older than the write that made it.
 */
export async function listPanels(ctx: ServiceContext, q: ListPanelsInput): Promise<PanelPage> {
  const { tenantId, userId } = ctx.scope
  let version = await ctx.cache.get<string>(tenantId, listVersionKey(userId))
  if (version === undefined) {
    version = crypto.randomUUID()
    await ctx.cache.set(tenantId, listVersionKey(userId), version)
  }
  return ctx.cache.wrap(tenantId, listKey(userId, version, q), () => loadPanels(ctx, q)) as Promise<PanelPage>
}

/** Drops every cached panel list of `ownerId` (after a create, update or delete of their panels). */
const invalidateLists = (ctx: ServiceContext, ownerId: string) => ctx.cache.del(ctx.scope.tenantId, listVersionKey(ownerId))

/** Drops a panel's cached answer and its owner's cached lists, after a write by another service (its default view). */
export async function forgetPanel(ctx: ServiceContext, panel: { id: number; userId: string }) {
  await ctx.cache.del(ctx.scope.tenantId, panelKey(panel.id))
  await invalidateLists(ctx, panel.userId)
}

async function loadPanels(ctx: ServiceContext, q: ListPanelsInput): Promise<PanelPage> {
  const conditions: SQL[] = [
    eq(panels.tenantId, ctx.scope.tenantId),
    eq(panels.userId, ctx.scope.userId),
    isNull(panels.deletedAt),
  ]
  if (q.search) {
    const pattern = `%${q.search.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`
    conditions.push(
      or(sql`${panels.name} LIKE ${pattern} ESCAPE '\\'`, sql`${panels.description} LIKE ${pattern} ESCAPE '\\'`) as SQL,
    )
  }
  const where = and(...conditions)
  const direction = q.order === 'asc' ? asc : desc
  const sortColumn =
    q.sort === 'name' ? sql`${panels.name} COLLATE NOCASE` : q.sort === 'updatedAt' ? panels.updatedAt : panels.createdAt
  const orderBy = [direction(sortColumn), direction(panels.id)]
  const paged = q.page !== undefined || q.limit !== undefined
  const query = ctx.db
    .select()
    .from(panels)
    .where(where)
    .orderBy(...orderBy)
  if (!paged) {
    const items = (await query).map(toPanelDto)
    const listed = q.sort !== undefined || q.order !== undefined || q.search !== undefined
    return listed ? { items, page: { total: items.length, page: 1 } } : { items }
  }
  const page = q.page ?? 1
  const limit = q.limit ?? 50
  const [rows, [{ total }]] = await ctx.db.batch([
    query.limit(limit).offset((page - 1) * limit),
    ctx.db.select({ total: sql<number>`count(*)` }).from(panels).where(where),
  ])
  return { items: rows.map(toPanelDto), page: { total, page, limit } }
}

/** Creates the panel with its empty cohort rule and its CREATE change in one batch (spec §3). */
export async function createPanel(ctx: ServiceContext, input: CreatePanelInput): Promise<PanelDto> {
  const now = isoNow(ctx.clock)
  const values = {
    tenantId: ctx.scope.tenantId,
    userId: ctx.scope.userId,
    name: input.name,
    description: input.description ?? null,
    metadata: input.metadata ?? null,
    cohortRule: { conditions: [], logic: 'AND' as const },
    createdAt: now,
    updatedAt: now,
  }
  const id = sql`last_insert_rowid()`
  // No RETURNING and no insert builder: the row is exactly `values` plus the new id (the table has
  // no other defaults the DTO shows); this is the hot write path (docs/performance.md).
  const json = (v: unknown) => (v === null ? null : JSON.stringify(v))
  const [inserted] = await ctx.db.batch([
    ctx.db.run(sql`
      INSERT INTO panels (tenant_id, user_id, name, description, metadata, cohort_rule, created_at, updated_at)
      VALUES (${values.tenantId}, ${values.userId}, ${values.name}, ${values.description}, ${json(values.metadata)},
              ${json(values.cohortRule)}, ${now}, ${now})`),
    changeInsert(ctx, {
      panelId: id,
      entityType: 'Panel',
      entityId: id,
      action: 'CREATE',
      changes: createdFields(values, ['name', 'description', 'metadata', 'cohortRule']),
    }),
  ])
  await invalidateLists(ctx, values.userId)
  const newId = insertedId(inserted)
  return toPanelDto({
    ...values,
    id: newId,
    columnsVersion: 0,
    materialisedVersion: 0,
    defaultViewId: null,
    viewDefinition: null,
    viewDataSourceId: null,
    workflow: null,
    deletedAt: null,
  })
}

/** Updates name, description, metadata or cohort rule; records the diff and notifies view owners. */
export async function updatePanel(ctx: ServiceContext, id: number, input: UpdatePanelInput): Promise<PanelDto> {
  const before = await getPanel(ctx, id)
  const patch: Partial<PanelRow> = {}
  if (input.name !== undefined) patch.name = input.name
  if (input.description !== undefined) patch.description = input.description
  if (input.metadata !== undefined) patch.metadata = input.metadata
  if (input.cohortRule !== undefined) patch.cohortRule = input.cohortRule as PanelRow['cohortRule']
  const diff = diffFields(before as Partial<PanelRow>, patch, TRACKED)
  if (Object.keys(diff).length === 0) return before
  patch.updatedAt = isoNow(ctx.clock)
  const [[row]] = await ctx.db.batch([
    ctx.db.update(panels).set(patch).where(livePanel(ctx, id)).returning(),
    changeInsert(ctx, { panelId: id, entityType: 'Panel', entityId: id, action: 'UPDATE', changes: diff }),
    notifyViewOwners(ctx, {
      panelId: id,
      type: 'DATA_CHANGED',
      impact: 'info',
      message: `Panel "${patch.name ?? before.name}" was updated (${Object.keys(diff).join(', ')})`,
    }),
  ])
  await ctx.cache.del(ctx.scope.tenantId, panelKey(id))
  await invalidateLists(ctx, before.userId)
  if (!row) throw notFound('Panel', id, ctx.scope.tenantId)
  if (diff.cohortRule) await reevaluateViews(ctx, id)
  return toPanelDto(row as PanelRow)
}

/** Soft-deletes the panel (CONTRACT: DELETE); it and everything under it disappear, changes stay. */
export async function deletePanel(ctx: ServiceContext, id: number): Promise<void> {
  const before = await getPanel(ctx, id)
  const now = isoNow(ctx.clock)
  await ctx.db.batch([
    ctx.db.update(panels).set({ deletedAt: now, updatedAt: now }).where(livePanel(ctx, id)),
    // The work on its rows goes with the panel (docs/worklist.md "Re-sync, leaving and coming back").
    ...panelWorkRemoval(ctx.scope.tenantId, id).map((q) => ctx.db.run(q)),
    changeInsert(ctx, {
      panelId: id,
      entityType: 'Panel',
      entityId: id,
      action: 'DELETE',
      changes: { deletedAt: { oldValue: null, newValue: now }, name: { oldValue: before.name } },
    }),
  ])
  await ctx.cache.del(ctx.scope.tenantId, panelKey(id))
  await invalidateLists(ctx, before.userId)
}

/**
 * A new cohort rule changes which rows every view of the panel holds: each view's membership is
 * evaluated afresh (no `row.*` events), with one `view.updated` each (LIVE.md). A crash before it
 * leaves the views to be evaluated by the next write of the panel's rows.
 */
async function reevaluateViews(ctx: ServiceContext, panelId: number) {
  const statements = await panelEvaluationStatements(ctx.db, ctx.scope.tenantId, panelId, isoNow(ctx.clock))
  if (statements.length === 0) return
  await runBatch(
    ctx.db,
    statements.map((q) => ctx.db.run(q)),
  )
  ctx.live.committed(ctx.scope.tenantId)
}
