import { sql } from 'drizzle-orm'
import type { NotificationImpact, NotificationType } from '../../db/schema.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'

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
