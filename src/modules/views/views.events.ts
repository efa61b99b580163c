import type { SQL } from 'drizzle-orm'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { appendEvents } from '../../rowstore/events.ts'
import { toViewDto, type ViewRow } from './views.schemas.ts'

/**
 * The change-feed event of a change to a view (LIVE.md "Events": `view.updated`, `view.published`
 * with `{ view }` as its owner sees it, `view.deleted` with `{ id }`), as statements for the batch
 * of the change itself. The caller wakes the streams with `ctx.live.committed` after that batch.
 */
export function viewEvent(
  ctx: ServiceContext,
  type: 'view.updated' | 'view.published' | 'view.deleted',
  view: ViewRow,
  panel: { id: number; name: string },
): SQL[] {
  const data = type === 'view.deleted' ? { id: view.id } : { view: toViewDto(view, panel) }
  return appendEvents(ctx.scope.tenantId, [{ type, panelId: view.panelId, viewId: view.id, data }], isoNow(ctx.clock))
}
