import { sql } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import { viewKey } from '../../cache/view-key.ts'
import type { ServiceContext } from '../../context.ts'
import type { FieldChanges } from '../../db/schema.ts'
import { invalid } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { diffFields } from '../changes/changes.service.ts'
import { forgetPanel } from '../panels/panels.service.ts'
import { publishConfigOf, type StoredPublishConfig } from './views.access.ts'
import { hashPassword } from './views.password.ts'
import {
  DEFAULT_PUBLISH_CONFIG,
  type PublishConfigInput,
  type PublishViewInput,
  toViewDto,
  type ViewDto,
  type ViewRow,
} from './views.schemas.ts'
import { type LoadedView, loadViewFor, saveView } from './views.service.ts'

/**
 * Publishes a view (CONTRACT: Views, Notifications; issue 12 for the publish settings): its owner, an
 * admin, or a user the view gives `manage`. The first publish sets isPublished, publishedAt and
 * publishedBy and, in one batch, records a PUBLISH change and notifies every other user of the
 * tenant (VIEW_PUBLISHED, deduplicated per publish; users the settings keep out never see it).
 * Publishing again is idempotent: same publishedAt, no notice; changed settings are saved as an
 * UPDATE change. Without a publishConfig the stored one is kept, else the default (read, no groups).
 * A password (write-only) is stored as a slow salted hash; `isDefault` makes the view its panel's
 * default, clearing the previous one, in the same batch.
 */
export async function publishView(ctx: ServiceContext, id: number, input: PublishViewInput): Promise<ViewDto> {
  const view = await loadViewFor(ctx, id, 'manage', 'change the publish settings')
  const { row } = view
  const publishConfig = await storedConfig(input.publishConfig, publishConfigOf(row), row.publishConfig !== null)
  const also = await defaultViewStatements(ctx, view, publishConfig.isDefault === true)
  if (row.isPublished) {
    const changes = configChanges(row, publishConfig)
    if (Object.keys(changes).length === 0) return toViewDto(row, view.panel, view.access)
    const updated = await saveView(ctx, view, { publishConfig }, { action: 'UPDATE', changes, also })
    await forgetDefault(ctx, view, also)
    return toViewDto(updated, view.panel, view.access)
  }
  const publishedAt = isoNow(ctx.clock)
  const patch = { isPublished: true, publishedAt, publishedBy: ctx.scope.userId }
  const changes = {
    ...diffFields(row as Partial<ViewRow>, patch, ['isPublished', 'publishedAt', 'publishedBy']),
    ...configChanges(row, publishConfig),
  }
  const updated = await saveView(
    ctx,
    view,
    { ...patch, publishConfig },
    {
      action: 'PUBLISH',
      changes,
      notice: {
        type: 'VIEW_PUBLISHED',
        impact: 'info',
        message: `View "${publishConfig.publishedTitle ?? row.name}" was published`,
        dedupeKey: `publish:${row.id}:${publishedAt}`,
      },
      also,
    },
  )
  await forgetDefault(ctx, view, also)
  return toViewDto(updated, view.panel, view.access)
}

/**
 * Withdraws a view from the tenant (owner, admin or `manage`): isPublished false, publishedAt and
 * publishedBy null, as an UPDATE change; it stops being its panel's default. The publishConfig is
 * kept for a later publish. Idempotent.
 */
export async function unpublishView(ctx: ServiceContext, id: number): Promise<ViewDto> {
  const view = await loadViewFor(ctx, id, 'manage', 'unpublish the view')
  if (!view.row.isPublished) return toViewDto(view.row, view.panel, view.access)
  const patch = { isPublished: false, publishedAt: null, publishedBy: null }
  const changes = diffFields(view.row as Partial<ViewRow>, patch, ['isPublished', 'publishedAt', 'publishedBy'])
  const also = await defaultViewStatements(ctx, view, false)
  const updated = await saveView(ctx, view, patch, { action: 'UPDATE', changes, also })
  await forgetDefault(ctx, view, also)
  return toViewDto(updated, view.panel, view.access)
}

// --- Internal helpers ---

/**
 * The publish settings to store: the given ones (else the stored, else the default) with the
 * password replaced by its hash. `passwordProtected` needs a password, given now or kept from an
 * earlier publish; without protection no hash is kept.
 */
async function storedConfig(
  given: PublishConfigInput | undefined,
  before: StoredPublishConfig,
  hadConfig: boolean,
): Promise<StoredPublishConfig> {
  if (!given) return hadConfig ? before : { ...DEFAULT_PUBLISH_CONFIG }
  const { password, ...config } = given as PublishConfigInput & { password?: string }
  const stored: StoredPublishConfig = { ...config }
  if (config.passwordProtected === true) {
    if (password !== undefined) stored.passwordHash = await hashPassword(password)
    else if (before.passwordHash) stored.passwordHash = before.passwordHash
    else
      throw invalid(
        [{ path: 'publishConfig.password', message: 'passwordProtected needs a password (given once, never answered)' }],
        'A password-protected view needs a password',
      )
  }
  return stored
}

/**
 * The change of the publish settings without the password hash: the settings as answered, plus
 * `password: { newValue: "<SECRET>" }` when a password was set or changed.
 */
function configChanges(row: ViewRow, after: StoredPublishConfig): FieldChanges {
  const { passwordHash: oldHash, ...oldShown } = publishConfigOf(row)
  const { passwordHash: newHash, ...newShown } = after
  const changes = diffFields({ publishConfig: row.publishConfig === null ? null : oldShown }, { publishConfig: newShown }, [
    'publishConfig',
  ])
  if (newHash && newHash !== oldHash) changes.password = { newValue: '<SECRET>' }
  return changes
}

/**
 * Statements that make the view its panel's default view (clearing `isDefault` on the previous
 * one), or stop it being the default; none when nothing changes.
 */
async function defaultViewStatements(ctx: ServiceContext, view: LoadedView, isDefault: boolean): Promise<BatchItem<'sqlite'>[]> {
  const { row } = view
  const [panel] = await ctx.db.all<{ default_view_id: number | null }>(
    sql`SELECT default_view_id FROM panels WHERE id = ${row.panelId} AND tenant_id = ${row.tenantId}`,
  )
  const current = panel?.default_view_id ?? null
  if (isDefault && current !== row.id) {
    return [
      ctx.db.run(sql`
        UPDATE views SET publish_config = json_set(publish_config, '$.isDefault', json('false'))
        WHERE tenant_id = ${row.tenantId} AND panel_id = ${row.panelId} AND id <> ${row.id}
          AND json_extract(publish_config, '$.isDefault') = 1`),
      ctx.db.run(sql`UPDATE panels SET default_view_id = ${row.id} WHERE id = ${row.panelId} AND tenant_id = ${row.tenantId}`),
    ]
  }
  if (!isDefault && current === row.id) {
    return [ctx.db.run(sql`UPDATE panels SET default_view_id = NULL WHERE id = ${row.panelId} AND tenant_id = ${row.tenantId}`)]
  }
  return []
}

/** After a batch that moved the panel's default view: its cached answer, and the previous default's row. */
async function forgetDefault(ctx: ServiceContext, view: LoadedView, also: BatchItem<'sqlite'>[]) {
  if (also.length === 0) return
  const [panel] = await ctx.db.all<{ user_id: string }>(
    sql`SELECT user_id FROM panels WHERE id = ${view.row.panelId} AND tenant_id = ${view.row.tenantId}`,
  )
  if (panel) await forgetPanel(ctx, { id: view.row.panelId, userId: panel.user_id })
  const others = await ctx.db.all<{ id: number }>(
    sql`SELECT id FROM views WHERE tenant_id = ${view.row.tenantId} AND panel_id = ${view.row.panelId} AND id <> ${view.row.id}`,
  )
  await ctx.cache.del(ctx.scope.tenantId, ...others.map((o) => viewKey(o.id)))
}
