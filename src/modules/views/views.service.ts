import { and, desc, eq, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Cache } from '../../cache/cache.ts'
import { insertedId } from '../../db/client.ts'
import { type ChangeAction, type FieldChanges, panels, views } from '../../db/schema.ts'
import { forbidden, notFound } from '../../errors.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { changeInsert, createdFields, diffFields } from '../changes/changes.service.ts'
import { notifyTenantUsers, type TenantNotice } from '../notifications/notifications.service.ts'
import { findPanel, requirePanel } from '../panels/panels.service.ts'
import {
  type CreateViewInput,
  type ListViewsInput,
  toViewDto,
  type UpdateViewInput,
  type ViewDto,
  type ViewRow,
} from './views.schemas.ts'

const viewKey = (id: number) => `view:${id}`

/** Drops a view's cached row after a write outside this module (the audit's `accessedAt`). */
export const dropCachedView = (cache: Cache, tenantId: string, id: number) => cache.del(tenantId, viewKey(id))

/** The fields an update may change and whose diffs the UPDATE change record carries. */
export const TRACKED = [
  'name',
  'description',
  'config',
  'metadata',
  'filters',
  'sorting',
  'columnVisibility',
  'aggregations',
] as const

const ofTenant = (ctx: ServiceContext, id: number) => and(eq(views.id, id), eq(views.tenantId, ctx.scope.tenantId))

/** Owner rights: the view's owner, or an admin of the tenant (as for panels; CONTRACT: Ownership). */
const owns = (ctx: ServiceContext, row: ViewRow) => ctx.scope.isAdmin || row.userId === ctx.scope.userId

/** The view row of the caller's tenant through the tenant-keyed cache; writes delete the key. */
function findRow(ctx: ServiceContext, id: number): Promise<ViewRow | undefined> {
  return ctx.cache.wrap(ctx.scope.tenantId, viewKey(id), async () => {
    const [row] = await ctx.db.select().from(views).where(ofTenant(ctx, id)).limit(1)
    return row
  })
}

export interface LoadedView {
  row: ViewRow
  panel: { id: number; name: string }
}

/**
 * A view the caller may read (CONTRACT: Ownership): their own, or a published one of their tenant,
 * whose panel is live. Anything else, another tenant's included, is a 404 that reveals nothing.
 */
export async function loadVisibleView(ctx: ServiceContext, id: number): Promise<LoadedView> {
  const row = await findRow(ctx, id)
  if (!row || !(owns(ctx, row) || row.isPublished)) throw notFound('View', id, ctx.scope.tenantId)
  const panel = await findPanel(ctx, row.panelId)
  if (!panel) throw notFound('View', id, ctx.scope.tenantId)
  return { row, panel: { id: panel.id, name: panel.name } }
}

/**
 * A view the caller may change: owner only. A published view of someone else is visible to the
 * caller, so refusing it is a 403 FORBIDDEN; an unpublished one stays a 404 (views brief).
 */
export async function loadOwnView(ctx: ServiceContext, id: number): Promise<LoadedView> {
  const loaded = await loadVisibleView(ctx, id)
  if (!owns(ctx, loaded.row)) throw forbidden('Only the owner can change this view')
  return loaded
}

export interface ViewWrite {
  action: ChangeAction
  changes: FieldChanges
  /** A notification to every other user of the tenant, in the same batch. */
  notice?: Omit<TenantNotice, 'viewId'>
}

/**
 * Applies `patch` to the view with its change record (and notice) in one batch, then drops the
 * cached row. `updatedAt` is set here. Returns the stored row.
 */
export async function saveView(ctx: ServiceContext, view: LoadedView, patch: Partial<ViewRow>, write: ViewWrite) {
  const { row } = view
  const [[updated]] = await ctx.db.batch([
    ctx.db
      .update(views)
      .set({ ...patch, updatedAt: isoNow(ctx.clock) })
      .where(ofTenant(ctx, row.id))
      .returning(),
    changeInsert(ctx, {
      panelId: row.panelId,
      entityType: 'View',
      entityId: row.id,
      action: write.action,
      changes: write.changes,
    }),
    ...(write.notice ? [notifyTenantUsers(ctx, { ...write.notice, viewId: row.id })] : []),
  ])
  await ctx.cache.del(ctx.scope.tenantId, viewKey(row.id))
  if (!updated) throw notFound('View', row.id, ctx.scope.tenantId)
  return updated as ViewRow
}

/**
 * Applies a content patch (TRACKED fields) as an UPDATE change with field diffs; when the view is
 * published, every other user of the tenant gets a VIEW_UPDATED notice (CONTRACT: Notifications).
 * A patch that changes nothing writes nothing.
 */
export async function updateViewContent(ctx: ServiceContext, view: LoadedView, patch: Partial<ViewRow>): Promise<ViewRow> {
  const changes = diffFields(view.row as Partial<ViewRow>, patch, TRACKED)
  if (Object.keys(changes).length === 0) return view.row
  const name = patch.name ?? view.row.name
  const notice = view.row.isPublished
    ? {
        type: 'VIEW_UPDATED' as const,
        impact: 'info' as const,
        message: `View "${name}" was updated (${Object.keys(changes).join(', ')})`,
      }
    : undefined
  return saveView(ctx, view, patch, { action: 'UPDATE', changes, notice })
}

/**
 * The caller's own views plus the tenant's published views, each once, newest update first
 * (CONTRACT: Views). Views of soft-deleted panels never appear. `limit`/`offset` are optional.
 */
export async function listViews(ctx: ServiceContext, q: ListViewsInput): Promise<{ views: ViewDto[]; total: number }> {
  const { tenantId, userId } = ctx.scope
  const conditions: SQL[] = [eq(views.tenantId, tenantId), or(eq(views.userId, userId), eq(views.isPublished, true)) as SQL]
  if (q.panelId !== undefined) conditions.push(eq(views.panelId, q.panelId))
  if (q.published !== undefined) conditions.push(eq(views.isPublished, q.published))
  const where = and(...conditions)
  const livePanel = and(eq(panels.id, views.panelId), eq(panels.tenantId, tenantId), isNull(panels.deletedAt))
  const query = ctx.db
    .select({ view: views, panel: { id: panels.id, name: panels.name } })
    .from(views)
    .innerJoin(panels, livePanel)
    .where(where)
    .orderBy(desc(views.updatedAt), desc(views.id))
  const paged = q.limit !== undefined || q.offset !== undefined
  const [rows, [{ total }]] = await ctx.db.batch([
    paged ? query.limit(q.limit ?? 100).offset(q.offset ?? 0) : query,
    ctx.db.select({ total: sql<number>`count(*)` }).from(views).innerJoin(panels, livePanel).where(where),
  ])
  return { views: rows.map((r) => toViewDto(r.view, r.panel)), total: Number(total) }
}

/** One view as the caller may read it; the row is cached, the panel name comes from findPanel. */
export async function getView(ctx: ServiceContext, id: number): Promise<ViewDto> {
  const { row, panel } = await loadVisibleView(ctx, id)
  return toViewDto(row, panel)
}

/** Creates an unpublished view on a panel the caller owns, with its CREATE change (spec §3). */
export async function createView(ctx: ServiceContext, input: CreateViewInput): Promise<ViewDto> {
  const panel = await requirePanel(ctx, input.panelId)
  const now = isoNow(ctx.clock)
  const values = {
    tenantId: ctx.scope.tenantId,
    userId: ctx.scope.userId,
    panelId: panel.id,
    name: input.name,
    description: input.description,
    config: input.config,
    metadata: input.metadata,
    filters: input.filters,
    sorting: input.sorting,
    columnVisibility: input.columnVisibility,
    aggregations: input.aggregations,
    isPublished: false,
    publishedAt: null,
    publishedBy: null,
    publishConfig: null,
    createdAt: now,
    updatedAt: now,
    accessedAt: null,
  }
  const id = sql`last_insert_rowid()`
  const [inserted] = await ctx.db.batch([
    ctx.db.insert(views).values(values),
    changeInsert(ctx, {
      panelId: panel.id,
      entityType: 'View',
      entityId: id,
      action: 'CREATE',
      changes: createdFields(values, [...TRACKED, 'isPublished']),
    }),
  ])
  const newId = insertedId(inserted)
  return toViewDto({ ...values, id: newId }, panel)
}

/** Merges the given fields (config shallowly) into the caller's own view (CONTRACT: PUT view). */
export async function updateView(ctx: ServiceContext, id: number, input: UpdateViewInput): Promise<ViewDto> {
  const view = await loadOwnView(ctx, id)
  const patch: Partial<ViewRow> = {}
  if (input.name !== undefined) patch.name = input.name
  if (input.description !== undefined) patch.description = input.description
  if (input.config !== undefined) patch.config = { ...view.row.config, ...input.config } as ViewRow['config']
  if (input.metadata !== undefined) patch.metadata = input.metadata
  if (input.filters !== undefined) patch.filters = input.filters
  if (input.sorting !== undefined) patch.sorting = input.sorting
  if (input.columnVisibility !== undefined) patch.columnVisibility = input.columnVisibility
  if (input.aggregations !== undefined) patch.aggregations = input.aggregations
  const row = await updateViewContent(ctx, view, patch)
  return toViewDto(row, view.panel)
}

/** Deletes the caller's own view (hard delete) with its DELETE change; its notifications stay. */
export async function deleteView(ctx: ServiceContext, id: number): Promise<void> {
  const { row } = await loadOwnView(ctx, id)
  await ctx.db.batch([
    ctx.db.delete(views).where(ofTenant(ctx, id)),
    changeInsert(ctx, {
      panelId: row.panelId,
      entityType: 'View',
      entityId: id,
      action: 'DELETE',
      changes: { name: { oldValue: row.name }, isPublished: { oldValue: row.isPublished } },
    }),
  ])
  await ctx.cache.del(ctx.scope.tenantId, viewKey(id))
}
