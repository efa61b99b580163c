import { and, desc, eq, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import { viewKey } from '../../cache/view-key.ts'
import type { ServiceContext } from '../../context.ts'
import { insertedId, runBatch } from '../../db/client.ts'
import { type ChangeAction, type FieldChanges, panels, views } from '../../db/schema.ts'
import { sharedAway } from '../../db/view-sharing.sql.ts'
import { notFound, permissionDenied } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { viewEvaluationStatements } from '../../rowstore/membership.ts'
import { changeInsert, createdFields, diffFields } from '../changes/changes.service.ts'
import { notifyTenantUsers, type TenantNotice } from '../notifications/notifications.service.ts'
import { findPanel, forgetPanel, requirePanel } from '../panels/panels.service.ts'
import { isLive, publishConfigOf, type ViewAccess, type ViewPermission, viewAccess } from './views.access.ts'
import { viewEvent } from './views.events.ts'
import { expirePublication } from './views.expiry.ts'
import { requireViewPassword } from './views.password.ts'
import {
  type CopyViewInput,
  type CreateViewInput,
  type ListViewsInput,
  toViewDto,
  type UpdateViewInput,
  type ViewDto,
  type ViewRow,
} from './views.schemas.ts'

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
  /** What the caller may do with it (views.access.ts). */
  access: ViewAccess
}

/**
 * A view the caller may see (views.access.ts): their own (or any, for an admin), or a published one
 * of their tenant that is not expired and shares a group with them when it names groups, whose panel
 * is live; a password-protected one only with its password. Anything else, another tenant's included,
 * is a 404 that reveals nothing. A publication found past its `expiresAt` is ended here, at read
 * time, so an expired view is never served.
 */
export async function loadVisibleView(ctx: ServiceContext, id: number): Promise<LoadedView> {
  let row = await findRow(ctx, id)
  if (!row) throw notFound('View', id, ctx.scope.tenantId)
  const now = ctx.clock.now()
  if (row.isPublished && !isLive(row, now)) {
    await expirePublication(ctx, row)
    row = await findRow(ctx, id)
    if (!row) throw notFound('View', id, ctx.scope.tenantId)
  }
  const access = viewAccess(row, ctx.scope, now)
  if (!access.visible) throw notFound('View', id, ctx.scope.tenantId)
  const panel = await findPanel(ctx, row.panelId)
  if (!panel) throw notFound('View', id, ctx.scope.tenantId)
  if (access.needsPassword) await requireViewPassword(ctx, id, publishConfigOf(row).passwordHash)
  return { row, panel: { id: panel.id, name: panel.name }, access }
}

/**
 * A view the caller may see and act on with `permission` (docs/view-sharing.md); the owner and
 * admins have every permission. Seeing it without the permission is a 403 naming it.
 */
export async function loadViewFor(ctx: ServiceContext, id: number, permission: ViewPermission, doing: string) {
  const view = await loadVisibleView(ctx, id)
  requireViewPermission(view, permission, doing)
  return view
}

/** A 403 naming `permission` unless the caller has it on the view (the owner and admins have all). */
export function requireViewPermission(view: LoadedView, permission: ViewPermission, doing: string) {
  if (!view.access.permissions.has(permission)) throw permissionDenied(permission, doing)
}

export interface ViewWrite {
  action: ChangeAction
  changes: FieldChanges
  /** A notification to every other user of the tenant, in the same batch. */
  notice?: Omit<TenantNotice, 'viewId'>
  /** Further statements of the same batch (the panel's default view). */
  also?: BatchItem<'sqlite'>[]
}

/**
 * Applies `patch` to the view with its change record (and notice) in one batch, then drops the
 * cached row. `updatedAt` is set here. Returns the stored row.
 */
export async function saveView(ctx: ServiceContext, view: LoadedView, patch: Partial<ViewRow>, write: ViewWrite) {
  const { row } = view
  const at = isoNow(ctx.clock)
  const patched = {
    id: row.id,
    filters: patch.filters,
    config: patch.config,
    columnVisibility: patch.columnVisibility,
    sorting: patch.sorting,
    aggregations: patch.aggregations,
  }
  const membership = await viewEvaluationStatements(ctx.db, row, at, { patched })
  const type = write.action === 'PUBLISH' ? 'view.published' : 'view.updated'
  const exists = sql`EXISTS (SELECT 1 FROM views WHERE id = ${row.id})`
  const [[updated]] = await ctx.db.batch([
    ctx.db
      .update(views)
      .set({ ...patch, updatedAt: at })
      .where(ofTenant(ctx, row.id))
      .returning(),
    ...membership.map((q) => ctx.db.run(q)),
    ...viewEvent(type, { ...row, ...patch, updatedAt: at }, view.panel, at, exists).map((q) => ctx.db.run(q)),
    changeInsert(ctx, {
      panelId: row.panelId,
      entityType: 'View',
      entityId: row.id,
      action: write.action,
      changes: write.changes,
    }),
    ...(write.notice ? [notifyTenantUsers(ctx, { ...write.notice, viewId: row.id })] : []),
    ...(write.also ?? []),
  ])
  ctx.live.committed(row.tenantId)
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
  const shared = ctx.scope.isAdmin
    ? eq(views.isPublished, true)
    : and(eq(views.isPublished, true), sql`NOT ${sharedAway(ctx, views)}`)
  const conditions: SQL[] = [eq(views.tenantId, tenantId), or(eq(views.userId, userId), shared) as SQL]
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
  const now = ctx.clock.now()
  return { views: rows.map((r) => toViewDto(r.view, r.panel, viewAccess(r.view, ctx.scope, now))), total: Number(total) }
}

/** One view as the caller may read it; the row is cached, the panel name comes from findPanel. */
export async function getView(ctx: ServiceContext, id: number): Promise<ViewDto> {
  const { row, panel, access } = await loadVisibleView(ctx, id)
  return toViewDto(row, panel, access)
}

/** Creates an unpublished view on a panel the caller owns, with its CREATE change (spec §3). */
export async function createView(ctx: ServiceContext, input: CreateViewInput): Promise<ViewDto> {
  const panel = await requirePanel(ctx, input.panelId)
  const { name, description, config, metadata, filters, sorting, columnVisibility, aggregations } = input
  const content = { name, description, config, metadata, filters, sorting, columnVisibility, aggregations }
  return insertView(ctx, panel, content, null)
}

/**
 * Saves a copy of a view as the caller's own, unpublished (issue 12: the `create` permission, or
 * the owner and admins): its content, and `name` or "<name> (copy)". A copy of a view on a panel the
 * caller does not own keeps `sourceViewId`: its rows stay within that view's rows and columns while
 * the caller may read it (views.rows-scope.ts).
 */
export async function copyView(ctx: ServiceContext, id: number, input: CopyViewInput): Promise<ViewDto> {
  const source = await loadViewFor(ctx, id, 'create', 'save a copy of it')
  const shown = toViewDto(source.row, source.panel, source.access)
  const panel = await findPanel(ctx, source.row.panelId)
  if (!panel) throw notFound('View', id, ctx.scope.tenantId)
  const ownsPanel = ctx.scope.isAdmin || panel.userId === ctx.scope.userId
  const { row } = source
  const content = {
    name: input.name ?? `${shown.name} (copy)`,
    description: input.description ?? shown.description,
    config: row.config,
    metadata: {},
    filters: row.filters,
    sorting: row.sorting,
    columnVisibility: row.columnVisibility,
    aggregations: row.aggregations,
  }
  return insertView(ctx, panel, content, ownsPanel ? null : row.id)
}

type ViewContent = Pick<
  ViewRow,
  'name' | 'description' | 'config' | 'metadata' | 'filters' | 'sorting' | 'columnVisibility' | 'aggregations'
>

/** Inserts an unpublished view of the caller with its CREATE change (spec §3). */
async function insertView(
  ctx: ServiceContext,
  panel: { id: number; name: string },
  content: ViewContent,
  sourceViewId: number | null,
): Promise<ViewDto> {
  const now = isoNow(ctx.clock)
  const values = {
    tenantId: ctx.scope.tenantId,
    userId: ctx.scope.userId,
    panelId: panel.id,
    ...content,
    isPublished: false,
    publishedAt: null,
    publishedBy: null,
    publishConfig: null,
    sourceViewId,
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
      changes: createdFields(values, [...TRACKED, 'isPublished', ...(sourceViewId === null ? [] : ['sourceViewId' as const])]),
    }),
  ])
  const newId = insertedId(inserted)
  await evaluateNewView(ctx, { tenantId: values.tenantId, panelId: panel.id, id: newId })
  return toViewDto({ ...values, id: newId, membershipKey: null, memberCount: null }, panel)
}

/** The fields of an update that only `manage` may change (the rest are `edit`'s: docs/view-sharing.md). */
const MANAGED = ['name', 'description', 'metadata'] as const

/** Merges the given fields (config shallowly) into the caller's own view (CONTRACT: PUT view). */
export async function updateView(ctx: ServiceContext, id: number, input: UpdateViewInput): Promise<ViewDto> {
  const managing = MANAGED.filter((f) => input[f] !== undefined)
  const view = managing.length
    ? await loadViewFor(ctx, id, 'manage', `change ${managing.join(', ')}`)
    : await loadViewFor(ctx, id, 'edit', 'change the view')
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
  return toViewDto(row, view.panel, view.access)
}

/** Deletes the caller's own view (hard delete) with its DELETE change; its notifications stay. */
export async function deleteView(ctx: ServiceContext, id: number): Promise<void> {
  const { row, panel } = await loadViewFor(ctx, id, 'delete', 'delete the view')
  const at = isoNow(ctx.clock)
  const deleted = viewEvent('view.deleted', row, panel, at, sql`EXISTS (SELECT 1 FROM views WHERE id = ${id})`)
  await runBatch(ctx.db, [
    ...deleted.map((q) => ctx.db.run(q)),
    ctx.db.delete(views).where(ofTenant(ctx, id)),
    ctx.db.run(sql`DELETE FROM view_members WHERE view_id = ${id}`),
    ctx.db.run(sql`UPDATE panels SET default_view_id = NULL
      WHERE id = ${row.panelId} AND tenant_id = ${ctx.scope.tenantId} AND default_view_id = ${id}`),
    changeInsert(ctx, {
      panelId: row.panelId,
      entityType: 'View',
      entityId: id,
      action: 'DELETE',
      changes: { name: { oldValue: row.name }, isPublished: { oldValue: row.isPublished } },
    }),
  ])
  ctx.live.committed(row.tenantId)
  await ctx.cache.del(ctx.scope.tenantId, viewKey(id))
  const owner = await findPanel(ctx, panel.id)
  if (owner?.defaultViewId === id) await forgetPanel(ctx, owner)
}

/**
 * A new view's first evaluation: its membership set from the rows it matches now, without a
 * `row.entered` for each; one `view.updated` says so (LIVE.md).
 */
async function evaluateNewView(ctx: ServiceContext, view: { tenantId: string; panelId: number; id: number }) {
  const statements = await viewEvaluationStatements(ctx.db, view, isoNow(ctx.clock), { announce: true })
  if (statements.length === 0) return
  await runBatch(
    ctx.db,
    statements.map((q) => ctx.db.run(q)),
  )
  ctx.live.committed(view.tenantId)
}
