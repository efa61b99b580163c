import type { ServiceContext } from '../../context.ts'
import type { CohortRule } from '../../db/schema.ts'
import { readRowsPage } from '../../rowstore/member-page.ts'
import { type PreparedRows, prepareRows, type RowParams } from '../../rowstore/query/prepare.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { prepareViewRows } from '../views/views.query.ts'
import { rowLimitsFor } from '../views/views.rows-scope.ts'
import { loadVisibleView, requireViewPermission } from '../views/views.service.ts'
import type { RowsQueryInput, RowsResponseDto } from './rows.schemas.ts'

/**
 * The row endpoints (DATA-ENGINE: Endpoints): a panel's rows (its owner, or an admin) and a view's
 * rows (its owner or an admin, or a user its publish settings give `read`), paged, as the reference
 * APIResponse.
 */

/** The panel's rows: every column, the cohort rule applied, the request's filters/sort/search. */
export async function listPanelRows(ctx: ServiceContext, panelId: number, q: RowsQueryInput, url: string): Promise<RowsAnswer> {
  const panel = await requirePanel(ctx, panelId)
  noteAccess(ctx, { panelId: panel.id })
  const prepared = await prepareRows(ctx, { panel: { id: panel.id, cohortRule: panel.cohortRule as CohortRule } }, rowParams(q))
  return answer(ctx, prepared, q, url)
}

/** The view's rows: its filters, sorting, columns, groups and aggregations, plus the request's. */
export async function listViewRows(ctx: ServiceContext, viewId: number, q: RowsQueryInput, url: string): Promise<RowsAnswer> {
  const view = await loadVisibleView(ctx, viewId)
  noteAccess(ctx, { panelId: view.row.panelId, viewId: view.row.id })
  requireViewPermission(view, 'read', 'read its rows')
  return answer(ctx, await prepareViewRows(ctx, view.row, rowParams(q), await rowLimitsFor(ctx, view)), q, url)
}

/**
 * The request's row parameters, `assignee` made a filter: `me` (or `@me`) is `_assignee equals @me`
 * (the reader), any other value that user id. ANDed with the request's own filters.
 */
function rowParams(q: RowsQueryInput): RowParams {
  const { assignee, ...params } = q
  if (assignee === undefined) return params
  const value = assignee === 'me' ? '@me' : assignee
  return { ...params, filters: [...(params.filters ?? []), { columnTitle: '_assignee', operator: 'equals', value }] }
}

/** `meta` and `links` of a page (pages ≥ 1; a page past the end is empty, with prev pointing back). */
export function pageMeta(total: number, page: number, limit: number, url: string) {
  const pages = Math.max(1, Math.ceil(total / limit))
  const at = (n: number) => {
    const u = new URL(url)
    u.searchParams.set('page', String(n))
    u.searchParams.set('limit', String(limit))
    return `${u.pathname}${u.search}`
  }
  return {
    meta: { total, page, limit, pages, hasNext: page < pages, hasPrev: page > 1 },
    links: {
      first: at(1),
      prev: page > 1 ? at(Math.min(page - 1, pages)) : null,
      next: page < pages ? at(page + 1) : null,
      last: at(pages),
    },
  }
}

/** A page of rows, and where it came from (a view's stored members or the row query: `Server-Timing`). */
export interface RowsAnswer {
  body: RowsResponseDto
  path: 'members' | 'query'
  /** Where the groups and aggregations came from, when the view has any. */
  summaryPath?: 'members' | 'query'
}

async function answer(ctx: ServiceContext, prepared: PreparedRows, q: RowsQueryInput, url: string): Promise<RowsAnswer> {
  const result = await readRowsPage(ctx, prepared, (q.page - 1) * q.limit, q.limit)
  const body: RowsResponseDto = { data: result.rows, ...pageMeta(result.total, q.page, q.limit, url) }
  if (result.groups) body.groups = result.groups
  if (result.aggregations) body.aggregations = result.aggregations
  noteAccess(ctx, { rowCount: body.data.length })
  return { body, path: result.path, summaryPath: result.summaryPath }
}
