import type { SQL } from 'drizzle-orm'
import { appendEvents } from '../../rowstore/events.ts'
import { toViewDto, type ViewRow } from './views.schemas.ts'

/**
 * The view events of the change feed (LIVE.md): `view.updated`, `view.published` with the whole
 * view as `GET /api/views/{id}` answers a reader of the published view (toViewDto, the same
 * function), plus `extra` fields of the event; `view.deleted` with its id. Statements for the batch
 * of the change itself; the caller wakes the feed (`ctx.live.committed`) after it commits.
 */
export function viewEvent(
  type: 'view.updated' | 'view.published' | 'view.deleted',
  row: ViewRow,
  panel: { id: number; name: string },
  at: string,
  when?: SQL,
  extra: Record<string, unknown> = {},
): SQL[] {
  const data = type === 'view.deleted' ? { id: row.id } : { view: toViewDto(row, panel, { full: false }), ...extra }
  return appendEvents(row.tenantId, [{ type, panelId: row.panelId, viewId: row.id, data }], at, when)
}
