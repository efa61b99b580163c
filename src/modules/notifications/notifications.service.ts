import { and, desc, eq, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { type NotificationImpact, type NotificationType, notifications, views } from '../../db/schema.ts'
import { rowComments } from '../../db/schema-work.ts'
import { sharedAway } from '../../db/view-sharing.sql.ts'
import { isoNow } from '../../lib/clock.ts'
import type { ListNotificationsInput, MarkReadInput, NotificationPageDto } from './notifications.schemas.ts'

export interface ViewOwnerNotice {
  panelId: number
  type: NotificationType
  impact: NotificationImpact
  message: string
  /** Only views showing one of these columns (by name); default: every view of the panel. */
  showingColumn?: string
}

/**
 * Notifies the owners of the panel's views about someone else's change (CONTRACT: Notifications):
 * one row per affected view, never for the actor. Returns a statement for the caller's batch.
 */
export function notifyViewOwners(ctx: ServiceContext, n: ViewOwnerNotice) {
  const columnFilter = n.showingColumn
    ? sql`AND EXISTS (SELECT 1 FROM json_each(json_extract(v.config, '$.columns')) WHERE value = ${n.showingColumn})`
    : sql``
  return ctx.db.run(sql`
    INSERT INTO notifications (tenant_id, user_id, view_id, type, impact, message, is_read, created_at)
    SELECT v.tenant_id, v.user_id, v.id, ${n.type}, ${n.impact}, ${n.message}, 0, ${isoNow(ctx.clock)}
    FROM views v
    WHERE v.tenant_id = ${ctx.scope.tenantId} AND v.panel_id = ${n.panelId} AND v.user_id <> ${ctx.scope.userId}
    ${columnFilter}`)
}

export interface TenantNotice {
  viewId: number
  type: NotificationType
  impact: NotificationImpact
  message: string
  /** Makes the notice exist at most once per recipient (a publish is idempotent). */
  dedupeKey?: string
}

/**
 * Notifies every other user known in the tenant (anyone owning a panel or a view there) about a
 * view, e.g. its publication. With a dedupe key, repeating the call creates no duplicates.
 */
export function notifyTenantUsers(ctx: ServiceContext, n: TenantNotice) {
  const { tenantId, userId } = ctx.scope
  return ctx.db.run(sql`
    INSERT INTO notifications (tenant_id, user_id, view_id, type, impact, message, is_read, dedupe_key, created_at)
    SELECT ${tenantId}, u.user_id, ${n.viewId}, ${n.type}, ${n.impact}, ${n.message}, 0, ${n.dedupeKey ?? null}, ${isoNow(ctx.clock)}
    FROM (SELECT user_id FROM panels WHERE tenant_id = ${tenantId} AND deleted_at IS NULL
          UNION SELECT user_id FROM views WHERE tenant_id = ${tenantId}) u
    WHERE u.user_id <> ${userId}
    ON CONFLICT DO NOTHING`)
}

/**
 * The caller's own notifications: recipient = scope user, within the scope tenant, leaving out those
 * about a view whose publish settings keep the caller out (groups, expiry: as if unpublished).
 */
const mine = (ctx: ServiceContext) =>
  and(
    eq(notifications.tenantId, ctx.scope.tenantId),
    eq(notifications.userId, ctx.scope.userId),
    ctx.scope.isAdmin
      ? undefined
      : sql`NOT EXISTS (SELECT 1 FROM views hv WHERE hv.id = ${notifications.viewId} AND hv.tenant_id = ${notifications.tenantId}
          AND ${sharedAway(ctx, 'hv')})`,
  ) as SQL

/**
 * The caller's view notifications, newest first (CONTRACT: Notifications). `total` counts the
 * filtered set, `unreadCount` every unread one of the caller whatever the filter. `view` is null
 * once the view or its panel is deleted; the notification itself stays. A `mention` also answers
 * its `comment` (null once deleted).
 */
export async function listNotifications(ctx: ServiceContext, q: ListNotificationsInput): Promise<NotificationPageDto> {
  const where = q.isRead === undefined ? mine(ctx) : (and(mine(ctx), eq(notifications.isRead, q.isRead)) as SQL)
  const liveView = and(
    eq(views.id, notifications.viewId),
    eq(views.tenantId, notifications.tenantId),
    sql`EXISTS (SELECT 1 FROM panels p WHERE p.id = ${views.panelId} AND p.deleted_at IS NULL)`,
  )
  // A mention's comment (dedupe key `mention:<commentId>`), while it and its panel exist.
  const mentioned = and(
    eq(notifications.type, 'mention'),
    sql`${rowComments.id} = CAST(substr(${notifications.dedupeKey}, 9) AS INTEGER)`,
    eq(rowComments.tenantId, notifications.tenantId),
    sql`EXISTS (SELECT 1 FROM panels p WHERE p.id = ${rowComments.panelId} AND p.deleted_at IS NULL)`,
  )
  const [rows, [counts]] = await ctx.db.batch([
    ctx.db
      .select({
        id: notifications.id,
        viewId: notifications.viewId,
        userId: notifications.userId,
        tenantId: notifications.tenantId,
        type: notifications.type,
        impact: notifications.impact,
        message: notifications.message,
        isRead: notifications.isRead,
        createdAt: notifications.createdAt,
        readAt: notifications.readAt,
        view: { id: views.id, name: views.name, panelId: views.panelId },
        comment: { id: rowComments.id, rowId: rowComments.rowId, panelId: rowComments.panelId },
      })
      .from(notifications)
      .leftJoin(views, liveView)
      .leftJoin(rowComments, mentioned)
      .where(where)
      .orderBy(desc(notifications.createdAt), desc(notifications.id))
      .limit(q.limit)
      .offset(q.offset),
    ctx.db
      .select({
        all: sql<number>`count(*)`,
        unread: sql<number>`coalesce(sum(CASE WHEN ${notifications.isRead} THEN 0 ELSE 1 END), 0)`,
      })
      .from(notifications)
      .where(mine(ctx)),
  ])
  const all = Number(counts.all)
  const unreadCount = Number(counts.unread)
  const total = q.isRead === undefined ? all : q.isRead ? all - unreadCount : unreadCount
  const notices = rows.map(({ comment, ...n }) => (n.type === 'mention' ? { ...n, comment } : n))
  return { notifications: notices, total, unreadCount, hasMore: q.offset + rows.length < total }
}

/**
 * Marks the caller's unread notifications among `notificationIds` as read and sets `readAt`.
 * Ids of other users or tenants, unknown ids and already read ones are skipped silently and not
 * counted, so the answer reveals nothing about notifications the caller does not own.
 */
export async function markNotificationsRead(ctx: ServiceContext, input: MarkReadInput): Promise<{ updated: number }> {
  const ids = [...new Set(input.notificationIds)]
  const updated = await ctx.db
    .update(notifications)
    .set({ isRead: true, readAt: isoNow(ctx.clock) })
    // The ids as one JSON parameter: D1 allows 100 bound parameters per statement, a list may hold 500.
    .where(
      and(
        mine(ctx),
        eq(notifications.isRead, false),
        sql`${notifications.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
      ),
    )
    .returning({ id: notifications.id })
  return { updated: updated.length }
}
