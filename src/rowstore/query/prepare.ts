import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import type { CohortRule, FilterCriterion, views, Workflow } from '../../db/schema.ts'
import type { AggregateFunction } from '../../engine/filters/kinds.ts'
import {
  type ColumnRef,
  checkAggregate,
  type FilterIssue,
  resolveCohortRule,
  resolveColumn,
  resolveFilters,
} from '../../engine/filters/resolve.ts'
import { invalid } from '../../errors.ts'
import { loadWorkflow, workClock } from '../workflow.ts'
import type { AggregateSpec } from './aggregate.ts'
import { loadPanelColumns, type PanelColumns } from './columns.ts'
import { filterSql, searchSql } from './filter-sql.ts'
import { type OrderTerm, orderByTerms, orderTerms } from './order.ts'
import { ensureRowIndex } from './row-index.ts'
import { visibleColumns } from './row-shape.ts'
import { viewSortKeys } from './view-order.ts'
import { meInFilters, virtualColumn, withVirtual } from './virtual.ts'

/**
 * The row query of a panel or a view (DATA-ENGINE: Views over rows), checked against the panel's
 * columns and compiled to SQL over the materialised cells of the current generation of each
 * source. The cohort rule always applies; a view adds its filters, sorting, groupBy,
 * aggregations and column choice; the request adds its own filters, sort and search.
 * run.ts runs it (pages, groups, batches for export).
 */

/** A stored view as the row query reads it. */
export type ViewRow = typeof views.$inferSelect

export interface RowParams {
  sort?: string
  order?: 'asc' | 'desc'
  search?: string
  /** Column names searched; every text column when absent. */
  searchFields?: string[]
  /** More criteria, ANDed with the view's own. */
  filters?: FilterCriterion[]
}

export interface PreparedRows {
  panelId: number
  /** `FROM … WHERE …` selecting the rows in scope (alias `r`). */
  scope: SQL
  /**
   * The same rows read in lasting-row-id order through the row-id index: for the keyset batches of
   * a query without sort terms (`r.row_id > ?` … `ORDER BY r.row_id`), which the cell index would
   * otherwise answer by sorting the whole panel once per batch.
   */
  idScope: SQL
  order: SQL
  /** The terms `order` sorts by before the row id (none: row-id order); exports walk them as a keyset. */
  terms: OrderTerm[]
  /** The columns a row carries, in order. */
  visible: ColumnRef[]
  groupBy: ColumnRef[]
  aggregations: AggregateSpec[]
  /**
   * Set when the rows asked for are exactly the view's stored members (rowstore/member-page.ts):
   * the view's own query, read by someone its `@me` and copy filters mean as for its owner, with
   * no filter, sort or search of the request's. The page may then come from `view_members`.
   */
  members?: { tenantId: string; viewId: number; at: string }
}

export interface RowSource {
  panel: { id: number; cohortRule: CohortRule | null; workflow?: Workflow | null }
  /** The panel's columns when the caller has read them already (read here otherwise). */
  columns?: PanelColumns
  view?: ViewRow
  /**
   * The rows and columns a caller who does not own the panel is held to (views.rows-scope.ts): the
   * filters of the published view a copy derives from, applied first with every column, and the
   * columns the caller's own criteria (and a copy's settings) may name — any other name is unknown.
   */
  limits?: { filters?: FilterCriterion[]; columns: ReadonlySet<string>; viewIsTheCallers: boolean }
}

/**
 * Checks and compiles a row query. Every unknown column and every operator or aggregation that
 * cannot apply is reported at once: a 400 whose details name each criterion.
 */
export async function prepareRows(ctx: ServiceContext, source: RowSource, params: RowParams = {}): Promise<PreparedRows> {
  const { panel, view } = source
  const columns = source.columns ?? (await loadPanelColumns(ctx, panel.id))
  await ensureRowIndex(
    ctx.db,
    panel.id,
    columns.list.map((c) => c.id),
  )
  const issues: FilterIssue[] = []
  // The work state's virtual columns (`_status`, …) are there for every reader, at this moment of the service's clock.
  const workflow = panel.workflow === undefined ? await loadWorkflow(ctx, panel.id) : panel.workflow
  const clock = workClock(workflow, ctx.clock.now())
  const virtual = (name: string) => virtualColumn(name, clock)
  const all = withVirtual(columns.byName, clock)
  const { limits } = source
  // The caller's own criteria; the view's too when the view is the caller's copy of a published one.
  const callers = limits ? (name: string) => (limits.columns.has(name) ? all(name) : virtual(name)) : all
  const viewLookup = limits?.viewIsTheCallers ? callers : all
  // `@me` as a value of `_assignee` is the reader.
  const me = (list: FilterCriterion[] | undefined) => meInFilters(list ?? [], ctx.scope.userId)
  const conditions: SQL[] = [
    filterSql(resolveCohortRule(panel.cohortRule, all, issues)),
    filterSql(resolveFilters(me(limits?.filters), all, 'source.filters', issues)),
    filterSql(resolveFilters(me(view?.filters), viewLookup, 'view.filters', issues)),
    filterSql(resolveFilters(me(params.filters), callers, 'filters', issues)),
  ]
  const reachable = limits ? columns.list.filter((c) => limits.columns.has(c.name)) : columns.list
  if (params.search) {
    const fields = params.searchFields?.length
      ? params.searchFields.flatMap((name, i) => resolveColumn(name, callers, `searchFields[${i}]`, issues) ?? [])
      : reachable.filter((c) => c.kind === 'text' || c.kind === 'list')
    conditions.push(searchSql(fields, params.search))
  }
  const request = params.sort ? resolveColumn(params.sort, callers, 'sort', issues) : undefined
  const order = viewSortKeys(
    { groupBy: view?.config.groupBy, sorting: view?.sorting },
    viewLookup,
    issues,
    request ? { column: request, direction: params.order ?? 'asc' } : undefined,
  )
  const { groupBy } = order
  const aggregations = (view?.aggregations ?? []).flatMap((a, i): AggregateSpec[] => {
    const column = resolveColumn(a.columnTitle, viewLookup, `view.aggregations[${i}].columnTitle`, issues)
    const fn = a.function as AggregateFunction
    if (!column || !checkAggregate(fn, column, `view.aggregations[${i}].function`, issues)) return []
    return [{ key: a.alias ?? `${fn}(${a.columnTitle})`, fn, column }]
  })
  if (issues.length > 0) {
    throw invalid(issues, `Invalid row query: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
  // Grouped rows come group by group (keys ascending, blanks last), then in the view's order.
  const terms = orderTerms(order.keys)
  return {
    panelId: panel.id,
    scope: scopeSql(ctx.scope.tenantId, panel.id, conditions),
    idScope: scopeSql(ctx.scope.tenantId, panel.id, conditions, true),
    order: orderByTerms(terms),
    terms,
    visible: view ? visibleColumns(limits?.viewIsTheCallers ? reachable : columns.list, view, virtual) : columns.list,
    groupBy,
    aggregations,
    members:
      view && readsMembers(source, params, ctx.scope.userId)
        ? { tenantId: ctx.scope.tenantId, viewId: view.id, at: clock.now }
        : undefined,
  }
}

// --- Internal helpers ---

/**
 * The rows asked for are the view's members as its membership holds them (membership-plan.ts: the
 * cohort rule and the filters of the view and of the views it was copied from, `@me` its owner):
 * no criteria of the request's; a copy read under its source's filters (not by the panel's owner,
 * who reads a copy with its own filters only); `@me` meaning the view's owner.
 */
function readsMembers(source: RowSource, params: RowParams, userId: string): boolean {
  const { view, limits } = source
  if (!view || params.filters?.length || params.search || params.sort) return false
  if (view.sourceViewId !== null && limits?.filters === undefined) return false
  const criteria = JSON.stringify([view.filters, limits?.filters ?? []])
  return view.userId === userId || !criteria.includes('"@me"')
}

/**
 * `FROM … WHERE …` of the rows in scope: the panel's records of the current generation of each
 * of its tenant's sources. `panel_id` is an inlined integer so the partial row index applies.
 */
function scopeSql(tenantId: string, panelId: number, conditions: SQL[], byId = false): SQL {
  if (!Number.isSafeInteger(panelId) || panelId <= 0) throw new Error(`invalid panel id ${panelId}`)
  const from = byId ? sql`FROM records r INDEXED BY records_row_idx` : sql`FROM records r`
  const tenant = byId ? sql`r.tenant_id = ${tenantId} AND ` : sql``
  return sql`${from} JOIN data_sources s ON s.id = r.data_source_id AND s.tenant_id = ${tenantId}
    WHERE ${tenant}r.panel_id = ${sql.raw(String(panelId))} AND r.generation = s.current_generation AND ${sql.join(conditions, sql` AND `)}`
}
