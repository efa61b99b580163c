import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import type { AggregationSpec, CohortRule, FilterCriterion, SortCriterion, Workflow } from '../db/schema.ts'
import {
  type ColumnLookup,
  type ColumnRef,
  type FilterIssue,
  resolveCohortRule,
  resolveFilters,
} from '../engine/filters/resolve.ts'
import { hashText } from './digest.ts'
import { type PanelColumns, panelColumnsOf } from './query/columns.ts'
import { filterSql } from './query/filter-sql.ts'
import { type MemberOrder, memberOrder } from './query/member-order.ts'
import { type MemberSummary, memberSummary, summaryIdentity } from './query/member-summary.ts'
import { visibleColumns } from './query/row-shape.ts'
import { viewSortKeys } from './query/view-order.ts'
import { meInFilters, VIRTUAL_NAMES, virtualColumn, type WorkClock, withVirtual } from './query/virtual.ts'
import { loadViewPayloads, type ViewPayload } from './view-payload.ts'
import { slaMs, workClock } from './workflow.ts'

/**
 * A panel's views compiled for their membership (membership.ts): each view's row condition (the
 * cohort rule, its filters and those of the views it was copied from), the shape of its rows, and
 * the key that names both, so a write can tell a view whose query changed since it was evaluated.
 */

/** What one view's membership is evaluated with. */
export interface MemberView {
  id: number
  userId: string
  name: string
  /** The view's row query and columns as text: a stored `membership_key` that differs means re-evaluate. */
  key: string
  storedKey: string | null
  /**
   * The condition over `r` (cohort rule and every filter) with the virtual columns as of when the
   * panel was loaded; null when the query no longer compiles. Writes use `whereAt`.
   */
  where: SQL | null
  /** The same condition with the virtual columns (`_overdue`, an expired claim, …) as of `now`: a write's time. */
  whereAt: (now: string) => SQL | null
  /** `[[name, column id | '_id' | '_key' | '_source' | '_errors' | virtual column name], …]`: how the row is shaped (JSON text). */
  shape: string
  /** What the shape's virtual columns are computed with (a write puts its own time in `now`). */
  clock: WorkClock
  /** The view filters on or shows a virtual column: a change of work state alone can move it. */
  readsWork: boolean
  /**
   * The order keys of a member (member-order.ts) over `r`, with the virtual columns as of `now`;
   * null when the view's order needs more keys than a member holds (its pages then sort).
   */
  orderAt: (now: string) => MemberOrder | null
  /**
   * The view's rule, filters or order name a column whose value changes with time alone
   * (`_overdue`, `_snoozed`, `_assignee`, `_claimExpiresAt`): which rows it holds, and in what
   * order, are as of the last write or time step (work-time.ts), which a reader checks is not behind.
   */
  readsTime: boolean
  /**
   * The group and aggregated columns its members hold values of (member-summary.ts); null for a
   * view that neither groups nor aggregates, or whose summary does not fit in a member.
   */
  summary: MemberSummary | null
}

/** The virtual columns whose value time alone changes (virtual.ts). */
const TIME_NAMES = ['_overdue', '_snoozed', '_assignee', '_claimExpiresAt']

/** The views of one panel, compiled for membership. */
export interface PanelMembership {
  tenantId: string
  panelId: number
  views: MemberView[]
  /**
   * The stored views as an event carries them, loaded only when a view is to be evaluated afresh
   * (never evaluated, or its query changed), for the `view.updated` that announces it.
   */
  payloads: Map<number, ViewPayload>
  /** The workflow's SLA in milliseconds (null: none): a row entering the panel gets its `dueAt` from it (work-time.ts). */
  slaMs: number | null
}

/**
 * After a batch that moved `membership` committed: every view whose query compiles is evaluated
 * under its current key now, so the next batch of the same writer moves it (and resets none).
 */
export function settle(membership: PanelMembership): void {
  membership.views = membership.views.map((v) => (v.where ? { ...v, storedKey: v.key } : v))
}

/** Copies of copies are followed this deep (as views.rows-scope.ts does for readers). */
const MAX_COPY_DEPTH = 5

/** A view's row-query fields as a write is about to store them (compiled instead of the stored ones). */
export interface ViewPatch {
  id: number
  filters?: unknown
  config?: unknown
  columnVisibility?: unknown
  sorting?: unknown
  aggregations?: unknown
}

/**
 * The panel's views compiled for membership; none when the panel is gone. With `patched`, that
 * view as it is about to be saved; with `only`, just that view (no payloads). `at`: the time of
 * the write the membership moves for, against which the time-dependent virtual columns (`_overdue`, `_snoozed`, an expired claim) are computed
 * (docs/worklist.md "Time rules"); the current time when not given.
 */
export async function loadPanelMembership(
  db: Db,
  tenantId: string,
  panelId: number,
  options: { patched?: ViewPatch; at?: string | Date; only?: number } = {},
): Promise<PanelMembership> {
  const [panels, viewRows, columnRows] = await db.batch([
    db.all<{ cohort_rule: string | null; workflow: string | null }>(
      sql`SELECT cohort_rule, workflow FROM panels WHERE id = ${panelId} AND tenant_id = ${tenantId} AND deleted_at IS NULL`,
    ),
    ...membershipReads(db, tenantId, panelId),
  ])
  return compileMembership(db, { tenantId, panelId, panel: panels[0], views: viewRows, columns: columnRows }, options)
}

/** A view as membership reads it (`membershipReads`). */
export type ViewRecord = {
  id: number
  user_id: string
  name: string
  filters: string
  config: string
  column_visibility: string
  sorting: string
  source_view_id: number | null
  membership_key: string | null
  aggregations: string
}

/** A column as membership reads it (`membershipReads`). */
export type ColumnRecord = { id: number; name: string; type: string; column_type: string; formula: string | null }

/** The reads of a panel's views and columns that membership is compiled from. */
const membershipReads = (db: Db, tenantId: string, panelId: number) =>
  [
    db.all<ViewRecord>(sql`
      SELECT id, user_id, name, filters, config, column_visibility, sorting, source_view_id, membership_key, aggregations FROM views
      WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} ORDER BY id`),
    db.all<ColumnRecord>(sql`
      SELECT id, name, type, column_type, formula FROM columns WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} ORDER BY id`),
  ] as const

/**
 * The views and the columns `membershipReads` reads, as two JSON columns (`views`, `columns`) of a
 * select of the panel aliased `p`: one statement instead of three for a caller that reads the
 * panel's row too (`membershipRecordsOf` makes the records again).
 */
export const membershipJsonColumns = (tenantId: string): SQL =>
  sql`(SELECT json_group_array(json_array(v.id, v.user_id, v.name, v.filters, v.config, v.column_visibility,
        v.sorting, v.source_view_id, v.membership_key, v.aggregations)) FROM views v WHERE v.tenant_id = ${tenantId} AND v.panel_id = p.id) AS views,
      (SELECT json_group_array(json_array(c.id, c.name, c.type, c.column_type, c.formula))
        FROM columns c WHERE c.tenant_id = ${tenantId} AND c.panel_id = p.id) AS columns`

/** The records of `membershipJsonColumns`' two columns, in id order as `membershipReads` reads them. */
export function membershipRecordsOf(json: { views: string; columns: string }): { views: ViewRecord[]; columns: ColumnRecord[] } {
  const views = (JSON.parse(json.views) as unknown[][]).map(
    ([
      id,
      user_id,
      name,
      filters,
      config,
      column_visibility,
      sorting,
      source_view_id,
      membership_key,
      aggregations,
    ]): ViewRecord => ({
      id: id as number,
      user_id: user_id as string,
      name: name as string,
      filters: filters as string,
      config: config as string,
      column_visibility: column_visibility as string,
      sorting: sorting as string,
      source_view_id: source_view_id as number | null,
      membership_key: membership_key as string | null,
      aggregations: aggregations as string,
    }),
  )
  const columns = (JSON.parse(json.columns) as unknown[][]).map(
    ([id, name, type, column_type, formula]): ColumnRecord => ({
      id: id as number,
      name: name as string,
      type: type as string,
      column_type: column_type as string,
      formula: formula as string | null,
    }),
  )
  return { views: views.sort((a, b) => a.id - b.id), columns: columns.sort((a, b) => a.id - b.id) }
}

/** The panel's columns as rows and filters see them, from the columns `membershipReads` read. */
export const columnsOfRecords = (columnRows: readonly ColumnRecord[]) =>
  panelColumnsOf(
    columnRows.map((c) => ({ id: c.id, name: c.name, type: c.type, columnType: c.column_type as never, formula: c.formula })),
  )

/**
 * The panel's views compiled for membership from what `membershipReads` read (and the panel's
 * cohort rule and workflow; no panel: gone, no views); `options` as for `loadPanelMembership`.
 */
export async function compileMembership(
  db: Db,
  read: {
    tenantId: string
    panelId: number
    panel: { cohort_rule: string | null; workflow: string | null } | undefined
    views: ViewRecord[]
    columns: readonly ColumnRecord[]
    /** `columns` as `columnsOfRecords` makes them, when the caller has made them already. */
    panelColumns?: PanelColumns
  },
  options: { patched?: ViewPatch; at?: string | Date; only?: number } = {},
): Promise<PanelMembership> {
  const { tenantId, panelId, panel } = read
  const { patched } = options
  // Patched below: a copy, so the caller's rows stay as read.
  const viewRows = [...read.views]
  if (!panel) return { tenantId, panelId, views: [], payloads: new Map(), slaMs: null }
  const cohortRule = panel.cohort_rule ? (JSON.parse(panel.cohort_rule) as CohortRule) : null
  const workflow = panel.workflow ? (JSON.parse(panel.workflow) as Workflow) : null
  const clock = workClock(workflow, options.at)
  const real = read.panelColumns ?? columnsOfRecords(read.columns)
  // The work state's virtual columns as of now; a write compiles them at its own time (`whereAt`,
  // docs/worklist.md "Time moves rows").
  const columns = { list: real.list, byName: withVirtual(real.byName, clock) }
  if (patched) {
    const at = viewRows.findIndex((v) => Number(v.id) === patched.id)
    const v = viewRows[at]
    if (v) {
      viewRows[at] = {
        ...v,
        filters: patched.filters === undefined ? v.filters : JSON.stringify(patched.filters),
        config: patched.config === undefined ? v.config : JSON.stringify(patched.config),
        column_visibility:
          patched.columnVisibility === undefined ? v.column_visibility : JSON.stringify(patched.columnVisibility),
        sorting: patched.sorting === undefined ? v.sorting : JSON.stringify(patched.sorting),
        aggregations: patched.aggregations === undefined ? v.aggregations : JSON.stringify(patched.aggregations),
      }
    }
  }
  const byId = new Map(viewRows.map((v) => [Number(v.id), v]))
  // `only`: a reader's check of one view's stored members (member-page.ts); the others are not compiled.
  const compiled = options.only === undefined ? viewRows : viewRows.filter((v) => Number(v.id) === options.only)
  const views = compiled.map((v): MemberView => {
    const chain = copyChain(v, byId)
    // The condition with the virtual columns as of `now`; `@me` in a view's filters is its owner:
    // the view's events are computed as for them.
    const condition = (now: string): { where: SQL; issues: FilterIssue[] } => {
      const issues: FilterIssue[] = []
      const lookup = now === clock.now ? columns.byName : withVirtual(real.byName, { ...clock, now })
      const cohort = resolveCohortRule(cohortRule, lookup, issues)
      const filters = chain.map((f, i) => resolveFilters(meInFilters(f, v.user_id), lookup, `filters[${i}]`, issues))
      return { where: sql.join([filterSql(cohort), ...filters.map(filterSql)], sql` AND `), issues }
    }
    const { where, issues } = condition(clock.now)
    const shown = shownColumns(columns.list, chain.length, v, byId, (name) => virtualColumn(name, clock))
    // The order its members are stored in (member-order.ts): the view's groups, then its sorting.
    const config = JSON.parse(v.config) as { groupBy?: string[] }
    const sorting = JSON.parse(v.sorting) as SortCriterion[]
    const orderAt = (now: string): MemberOrder | null => {
      const lookup = now === clock.now ? columns.byName : withVirtual(real.byName, { ...clock, now })
      const found: FilterIssue[] = []
      const { keys } = viewSortKeys({ groupBy: config.groupBy, sorting }, lookup, found)
      return found.length > 0 ? null : memberOrder(keys)
    }
    const summary = summaryOf(config.groupBy ?? [], JSON.parse(v.aggregations ?? '[]') as AggregationSpec[], columns.byName)
    // `rows: 4`: rows carry `_key` and their lasting `_id` (docs/worklist.md), members their order
    // keys (`order`) and summary values (`summary`); older memberships are evaluated afresh.
    const order = { groupBy: config.groupBy ?? [], sorting }
    const query = {
      rows: 4,
      cohortRule,
      filters: chain,
      shown: shown.map((c) => [c.id, c.name, c.kind]),
      order,
      summary: summaryIdentity(summary),
    }
    // The done statuses decide `_overdue`: a view that reads it is evaluated afresh when they change.
    const text = JSON.stringify(query)
    const key = JSON.stringify(text.includes('"_overdue"') ? { ...query, done: clock.done } : query)
    return {
      id: Number(v.id),
      userId: v.user_id,
      name: v.name,
      key: hashText(key),
      // Names a virtual column in its rule, filters or columns (a text that merely equals one counts too: harmless).
      readsWork: VIRTUAL_NAMES.some((name) => text.includes(`"${name}"`)),
      storedKey: v.membership_key,
      where: issues.length > 0 ? null : where,
      whereAt: (now) => (issues.length > 0 ? null : now === clock.now ? where : condition(now).where),
      orderAt,
      // Which rows and in what order: a column only shown is computed when the row is read.
      readsTime: TIME_NAMES.some((name) => JSON.stringify([cohortRule, chain, order]).includes(`"${name}"`)),
      summary,
      shape: JSON.stringify([
        ['_id', '_id'],
        ['_key', '_key'],
        ['_source', '_source'],
        ['_errors', '_errors'],
        ...shown.map((c) => [c.name, c.virtual ? c.name : c.id]),
      ]),
      clock,
    }
  })
  // Only a view whose query compiles is evaluated (and announced); one that does not never settles its key.
  const reset = options.only === undefined && views.some((v) => v.where !== null && v.key !== v.storedKey)
  return {
    tenantId,
    panelId,
    views,
    payloads: reset ? await loadViewPayloads(db, tenantId, panelId) : new Map(),
    slaMs: slaMs(workflow),
  }
}

/**
 * The summary a view's members keep: its group columns and aggregated columns, when they resolve
 * and none changes with time alone (a stored value would go stale between writes).
 */
function summaryOf(groupBy: string[], aggregations: AggregationSpec[], lookup: ColumnLookup): MemberSummary | null {
  const resolve = (name: string) => (TIME_NAMES.includes(name) ? undefined : lookup(name))
  const groups = groupBy.map(resolve)
  const aggregated = aggregations.map((a) => resolve(a.columnTitle))
  if ([...groups, ...aggregated].some((c) => c === undefined)) return null
  return memberSummary(groups as ColumnRef[], aggregated as ColumnRef[])
}

/** The filters a view's rows are held to: its own, then those of the views it was copied from. */
function copyChain(view: ViewRecord, byId: Map<number, ViewRecord>): FilterCriterion[][] {
  const chain = [JSON.parse(view.filters) as FilterCriterion[]]
  let at = view
  for (let depth = 0; at.source_view_id !== null && depth < MAX_COPY_DEPTH; depth++) {
    const source = byId.get(Number(at.source_view_id))
    if (!source) break
    chain.push(JSON.parse(source.filters) as FilterCriterion[])
    at = source
  }
  return chain
}

/** The columns a view shows its owner: for a copy, only among those the views above it show. */
function shownColumns(
  all: ColumnRef[],
  chainLength: number,
  view: ViewRecord,
  byId: Map<number, ViewRecord>,
  virtual: (name: string) => ColumnRef | undefined,
): ColumnRef[] {
  const shape = (v: ViewRecord) => ({
    config: JSON.parse(v.config) as { columns?: string[] },
    columnVisibility: JSON.parse(v.column_visibility) as Record<string, boolean>,
  })
  let reachable = all
  const above: ViewRecord[] = []
  let at = view
  for (let depth = 1; depth < chainLength; depth++) {
    const source = byId.get(Number(at.source_view_id))
    if (!source) break
    above.unshift(source)
    at = source
  }
  for (const source of above) reachable = visibleColumns(reachable, shape(source) as never)
  return visibleColumns(reachable, shape(view) as never, virtual)
}
