import type { ServiceContext } from '../../context.ts'
import { forbidden } from '../../errors.ts'
import { loadPanelColumns, type PanelColumns } from '../../rowstore/query/columns.ts'
import type { RowSource } from '../../rowstore/query/prepare.ts'
import { visibleColumns } from '../../rowstore/query/row-shape.ts'
import { findPanel } from '../panels/panels.service.ts'
import { type LoadedView, loadViewFor } from './views.service.ts'

type Limits = NonNullable<RowSource['limits']>

/** Copies of copies are followed this deep; a longer chain is refused rather than walked. */
const MAX_COPY_DEPTH = 5

/**
 * What a caller who does not own the view's panel may reach through the view (docs/view-sharing.md):
 * - reading someone's published view: only the columns it shows — request filters, sorts and
 *   searches naming any other column are an "unknown column" 400, as if it did not exist;
 * - a copy made with the `create` permission (its `sourceViewId`): the rows of the view it was copied
 *   from (whose filters apply first), the columns that view shows, and only while the caller may
 *   still `read` it (its password, groups and expiry included).
 * The panel's owner and tenant admins reach every row and column (undefined: no limits).
 */
export async function rowLimitsFor(
  ctx: ServiceContext,
  view: LoadedView,
  depth = 0,
  /** The view's panel's columns when the caller has read them already (read here otherwise). */
  known?: PanelColumns,
): Promise<Limits | undefined> {
  const panel = await findPanel(ctx, view.row.panelId)
  if (ctx.scope.isAdmin || panel?.userId === ctx.scope.userId) return undefined
  const columns = known ?? (await loadPanelColumns(ctx, view.row.panelId))
  if (view.row.sourceViewId === null) {
    if (view.row.userId === ctx.scope.userId) return undefined
    return { columns: new Set(visibleColumns(columns.list, view.row).map((c) => c.name)), viewIsTheCallers: false }
  }
  if (depth >= MAX_COPY_DEPTH) throw forbidden(`View ${view.row.id} is a copy of a copy more than ${MAX_COPY_DEPTH} deep`)
  const source = await loadViewFor(ctx, view.row.sourceViewId, 'read', 'read the rows of a copy of it')
  const above = await rowLimitsFor(ctx, source, depth + 1, source.row.panelId === view.row.panelId ? columns : undefined)
  const reachable = above ? columns.list.filter((c) => above.columns.has(c.name)) : columns.list
  return {
    filters: [...(above?.filters ?? []), { conditions: source.row.filters }],
    columns: new Set(visibleColumns(reachable, source.row).map((c) => c.name)),
    viewIsTheCallers: true,
  }
}
