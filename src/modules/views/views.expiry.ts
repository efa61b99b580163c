import { and, eq, sql } from 'drizzle-orm'
import { viewKey } from '../../cache/view-key.ts'
import type { ServiceContext } from '../../context.ts'
import { panels, views } from '../../db/schema.ts'
import { isoNow } from '../../lib/clock.ts'
import { forgetPanel } from '../panels/panels.service.ts'
import { viewEvent } from './views.events.ts'
import type { ViewRow } from './views.schemas.ts'

/** The view as the expiry's batch leaves it. */
const unpublished = (row: ViewRow, at: string): ViewRow => ({
  ...row,
  isPublished: false,
  publishedAt: null,
  publishedBy: null,
  updatedAt: at,
})

/**
 * The end of a publication at its `expiresAt` (issue 12, docs/view-sharing.md). Reads never serve
 * an expired view to anyone but its owner and admins (views.access.ts checks the time); the first
 * read after it, or the scheduler's sweep, unpublishes it here. Every statement of the batch is
 * conditioned on the view being published and due, so when two instances race only one batch
 * finds it so: the unpublish change (by `system`) and the owner's notification are recorded once.
 */
export async function expirePublication(ctx: ServiceContext, row: Pick<ViewRow, 'id' | 'tenantId' | 'panelId'>) {
  const now = isoNow(ctx.clock)
  const due = sql`id = ${row.id} AND tenant_id = ${row.tenantId} AND is_published = 1
    AND json_extract(publish_config, '$.expiresAt') <= ${now}`
  const metadata = JSON.stringify({ source: 'system', reason: 'publishConfig.expiresAt' })
  const [stored] = await ctx.db
    .select({ view: views, panel: { id: panels.id, name: panels.name } })
    .from(views)
    .innerJoin(panels, eq(panels.id, views.panelId))
    .where(and(eq(views.id, row.id), eq(views.tenantId, row.tenantId)))
  await ctx.db.batch([
    ctx.db.run(sql`
      INSERT INTO changes (tenant_id, user_id, panel_id, entity_type, entity_id, action, changes, metadata, created_at)
      SELECT tenant_id, 'system', panel_id, 'View', id, 'UPDATE',
        json_object(
          'isPublished', json_object('oldValue', json('true'), 'newValue', json('false')),
          'publishedAt', json_object('oldValue', published_at, 'newValue', NULL),
          'publishedBy', json_object('oldValue', published_by, 'newValue', NULL)),
        ${metadata}, ${now}
      FROM views WHERE ${due}`),
    ctx.db.run(sql`
      INSERT INTO notifications (tenant_id, user_id, view_id, type, impact, message, is_read, dedupe_key, created_at)
      SELECT tenant_id, user_id, id, 'VIEW_UPDATED', 'warning',
        'View "' || name || '" reached its expiry (' || json_extract(publish_config, '$.expiresAt') || ') and is no longer published',
        0, 'expired:' || id || ':' || published_at, ${now}
      FROM views WHERE ${due}
      ON CONFLICT DO NOTHING`),
    ctx.db.run(sql`
      UPDATE panels SET default_view_id = NULL
      WHERE id = ${row.panelId} AND tenant_id = ${row.tenantId} AND default_view_id = ${row.id}
        AND EXISTS (SELECT 1 FROM views WHERE ${due})`),
    // The feed's view.updated: the view as GET answers it once unpublished.
    ...(stored
      ? viewEvent(
          'view.updated',
          unpublished(stored.view, now),
          stored.panel,
          now,
          sql`EXISTS (SELECT 1 FROM views WHERE ${due})`,
          {
            reason: 'publishConfig.expiresAt',
          },
        )
      : []
    ).map((q) => ctx.db.run(q)),
    ctx.db.run(sql`
      UPDATE views SET is_published = 0, published_at = NULL, published_by = NULL, updated_at = ${now} WHERE ${due}`),
  ])
  ctx.live.committed(row.tenantId)
  await ctx.cache.del(row.tenantId, viewKey(row.id))
  const [panel] = await ctx.db.all<{ user_id: string }>(
    sql`SELECT user_id FROM panels WHERE id = ${row.panelId} AND tenant_id = ${row.tenantId}`,
  )
  if (panel) await forgetPanel(ctx, { id: row.panelId, userId: panel.user_id })
}

/**
 * The scheduler's sweep: ends the publications of every tenant whose `expiresAt` has passed (at most
 * `limit` per call), so the owner hears of it even when nobody reads the view. Answers how many.
 */
export async function expireDuePublications(
  contextFor: (tenantId: string) => ServiceContext,
  db: ServiceContext['db'],
  now: Date,
  limit = 100,
): Promise<number> {
  const due = await db.all<{ id: number; tenant_id: string; panel_id: number }>(sql`
    SELECT id, tenant_id, panel_id FROM views
    WHERE is_published = 1 AND json_extract(publish_config, '$.expiresAt') <= ${now.toISOString()}
    LIMIT ${limit}`)
  for (const v of due) await expirePublication(contextFor(v.tenant_id), { id: v.id, tenantId: v.tenant_id, panelId: v.panel_id })
  return due.length
}
