import type { ServiceContext } from '../../context.ts'
import type { CohortRule } from '../../db/schema.ts'
import { notFound } from '../../errors.ts'
import { readRowBatches } from '../../rowstore/member-page.ts'
import { type PreparedRows, prepareRows, type RowParams, type RowSource } from '../../rowstore/query/prepare.ts'
import type { Row } from '../../rowstore/query/row-shape.ts'
import type { RowBatchOptions } from '../../rowstore/query/run.ts'
import { findPanel } from '../panels/panels.service.ts'
import type { ViewRow } from './views.schemas.ts'

/** The row query of a view the caller may read (export, notifications): its panel must be live. */
export async function prepareViewRows(
  ctx: ServiceContext,
  view: ViewRow,
  params: RowParams = {},
  limits?: RowSource['limits'],
): Promise<PreparedRows> {
  const panel = await findPanel(ctx, view.panelId)
  if (!panel) throw notFound('View', view.id, ctx.scope.tenantId)
  return prepareRows(ctx, { panel: { id: panel.id, cohortRule: panel.cohortRule as CohortRule }, view, limits }, params)
}

/**
 * Every row of a view the caller may read (already checked: loadVisibleView), in id-keyset
 * batches, with the view's filters and cohort rule applied and its columns chosen. `params` may
 * add request filters or a search. For export (DATA-ENGINE: Export).
 */
export async function* viewRowBatches(
  ctx: ServiceContext,
  view: ViewRow,
  options: RowBatchOptions & { params?: RowParams } = {},
): AsyncGenerator<Row[]> {
  const prepared = await prepareViewRows(ctx, view, options.params)
  yield* readRowBatches(ctx, prepared, options)
}
