import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { diffFields } from '../changes/changes.service.ts'
import { DEFAULT_PUBLISH_CONFIG, type PublishViewInput, toViewDto, type ViewDto, type ViewRow } from './views.schemas.ts'
import { loadOwnView, saveView } from './views.service.ts'

/**
 * Publishes the caller's own view (CONTRACT: Views, Notifications). The first publish sets
 * isPublished, publishedAt and publishedBy and, in one batch, records a PUBLISH change and notifies
 * every other user of the tenant (VIEW_PUBLISHED, deduplicated per publish). Publishing again is
 * idempotent: same publishedAt, no notice; a changed publishConfig is saved as an UPDATE change.
 * Without a publishConfig the stored one is kept, else the default (read, no groups).
 */
export async function publishView(ctx: ServiceContext, id: number, input: PublishViewInput): Promise<ViewDto> {
  const view = await loadOwnView(ctx, id)
  const { row } = view
  const publishConfig = (input.publishConfig ?? row.publishConfig ?? DEFAULT_PUBLISH_CONFIG) as ViewRow['publishConfig']
  if (row.isPublished) {
    const changes = diffFields(row as Partial<ViewRow>, { publishConfig }, ['publishConfig'])
    if (Object.keys(changes).length === 0) return toViewDto(row, view.panel)
    const updated = await saveView(ctx, view, { publishConfig }, { action: 'UPDATE', changes })
    return toViewDto(updated, view.panel)
  }
  const publishedAt = isoNow(ctx.clock)
  const patch = { isPublished: true, publishedAt, publishedBy: ctx.scope.userId, publishConfig }
  const changes = diffFields(row as Partial<ViewRow>, patch, ['isPublished', 'publishedAt', 'publishedBy', 'publishConfig'])
  const updated = await saveView(ctx, view, patch, {
    action: 'PUBLISH',
    changes,
    notice: {
      type: 'VIEW_PUBLISHED',
      impact: 'info',
      message: `View "${row.name}" was published`,
      dedupeKey: `publish:${row.id}:${publishedAt}`,
    },
  })
  return toViewDto(updated, view.panel)
}

/**
 * Withdraws the caller's own view from the tenant: isPublished false, publishedAt/publishedBy
 * null, as an UPDATE change. The publishConfig is kept for a later publish. Idempotent.
 */
export async function unpublishView(ctx: ServiceContext, id: number): Promise<ViewDto> {
  const view = await loadOwnView(ctx, id)
  if (!view.row.isPublished) return toViewDto(view.row, view.panel)
  const patch = { isPublished: false, publishedAt: null, publishedBy: null }
  const changes = diffFields(view.row as Partial<ViewRow>, patch, ['isPublished', 'publishedAt', 'publishedBy'])
  const updated = await saveView(ctx, view, patch, { action: 'UPDATE', changes })
  return toViewDto(updated, view.panel)
}
