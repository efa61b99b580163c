import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../context.ts'
import { ORDER_KEY_NAMES } from '../db/schema-live.ts'
import { nextTurn } from '../lib/turn.ts'
import { compileMembership, type MemberView, membershipJsonColumns, membershipRecordsOf } from './membership-plan.ts'
import { memberOrderBy, membersAfter } from './query/member-order.ts'
import { memberSummarySource } from './query/member-summary.ts'
import type { PreparedRows } from './query/prepare.ts'
import { type RecordRow, type Row, recordColumns, toRow } from './query/row-shape.ts'
import { queryRowsPage, type RowBatchOptions, type RowsPage, rowBatches, type StoredPage } from './query/run.ts'
import { timeOwedSql } from './work-time.ts'

/**
 * A view's rows from what the row store already keeps (docs/views-and-rows.md "Access paths"):
 * `view_members` holds the view's rows with their order keys (member-order.ts), walked through one
 * index, and `views.member_count` their number. Only the records of the rows answered are then
 * read. The members answer only when they are the rows asked for, now:
 *
 * - the request adds nothing to the view's query (prepare.ts `members`);
 * - the view's membership was evaluated with the query and order it has now (its key), and its
 *   order fits in the member's keys;
 * - for a view that reads a column time alone changes (`_overdue`, an expired claim …), the time
 *   step owes its panel nothing (a due date passed since it ran would leave the members behind).
 *
 * Otherwise the row query over the panel answers (run.ts), with the same rows in the same order.
 */

/** A page of rows: from the view's stored members when they answer it, else from the row query. */
export async function readRowsPage(ctx: ServiceContext, q: PreparedRows, offset: number, limit: number): Promise<RowsPage> {
  return queryRowsPage(ctx, q, offset, limit, await readMemberPage(ctx, q, offset, limit))
}

/**
 * Every row of the query in batches, in its order (exports): a keyset walk of the view's members
 * when they answer it (checked once, as the walk starts), else run.ts `rowBatches`.
 */
export async function* readRowBatches(
  ctx: ServiceContext,
  q: PreparedRows,
  options: RowBatchOptions = {},
): AsyncGenerator<Row[]> {
  const view = await answeringView(ctx, q)
  const checked = view ? ((await ctx.db.batch(checkStatements(ctx, q, view))) as Checked) : undefined
  const batches = view && checked && holds(view, checked) ? memberBatches(ctx, q, view, options) : rowBatches(ctx, q, options)
  let first = true
  for await (const batch of batches) {
    // Between batches the process serves others: a reader of the stream in the same process (a
    // host embedding the app, app.request) never waits on I/O, so a million-row export would
    // otherwise hold the event loop from its first row to its last.
    if (!first) await nextTurn()
    first = false
    yield batch
  }
}

/**
 * The page at `offset` from the members, with their stored count; undefined when they do not
 * answer. One batch reads the panel's views and columns (to compile the view's key), the stored
 * key and count, the time step's debt and the page, so all describe one state; the page is used
 * only when the rest vouches for it.
 */
export async function readMemberPage(
  ctx: ServiceContext,
  q: PreparedRows,
  offset: number,
  limit: number,
): Promise<StoredPage | undefined> {
  const target = q.members
  if (!target) return undefined
  const { tenantId, viewId } = target
  const [panels, state, owed, records] = await ctx.db.batch([
    ctx.db.all<PanelRead>(panelReadSql(tenantId, q.panelId)),
    stateStatement(ctx, tenantId, viewId),
    ctx.db.all<{ owed: number }>(timeOwedSql(tenantId, q.panelId, target.at)),
    ctx.db.all<RecordRow>(memberRowsSql(tenantId, viewId, sql`TRUE`, limit, offset)),
  ])
  const view = await compiledView(ctx, q, panels[0])
  if (!view || !holds(view, [state, owed])) return undefined
  return { records, total: Number(state[0].total), summary: view.summary ? memberSummarySource(view.summary, viewId) : undefined }
}

// --- Internal helpers ---

/** The view of the query, compiled as its membership is, when its stored members were evaluated with what it is now. */
async function answeringView(ctx: ServiceContext, q: PreparedRows): Promise<MemberView | undefined> {
  const target = q.members
  if (!target) return undefined
  const [panel] = await ctx.db.all<PanelRead>(panelReadSql(target.tenantId, q.panelId))
  return compiledView(ctx, q, panel)
}

/** The panel's row with its views and columns as JSON (membership-plan.ts `membershipJsonColumns`). */
type PanelRead = { cohort_rule: string | null; workflow: string | null; views: string; columns: string }

const panelReadSql = (tenantId: string, panelId: number) =>
  sql`SELECT p.cohort_rule, p.workflow, ${membershipJsonColumns(tenantId)}
    FROM panels p WHERE p.id = ${panelId} AND p.tenant_id = ${tenantId} AND p.deleted_at IS NULL`

/** The query's view compiled from the panel read, when it is evaluated under its current key and its order fits. */
async function compiledView(ctx: ServiceContext, q: PreparedRows, panel: PanelRead | undefined): Promise<MemberView | undefined> {
  const target = q.members
  if (!target || !panel) return undefined
  const { views, columns } = membershipRecordsOf(panel)
  const membership = await compileMembership(
    ctx.db,
    { tenantId: target.tenantId, panelId: q.panelId, panel, views, columns },
    { at: target.at, only: target.viewId },
  )
  const view = membership.views.find((v) => v.id === target.viewId)
  if (!view?.where || view.storedKey !== view.key || view.orderAt(target.at) === null) return undefined
  return view
}

type Checked = [{ key: string | null; total: number | null }[], { owed: number }[]]

/** The view's stored key and count. */
const stateStatement = (ctx: ServiceContext, tenantId: string, viewId: number) =>
  ctx.db.all<{ key: string | null; total: number | null }>(
    sql`SELECT membership_key AS key, member_count AS total FROM views WHERE id = ${viewId} AND tenant_id = ${tenantId}`,
  )

/** The view's stored key and count, and whether time owes its panel a step: read with what they vouch for. */
function checkStatements(ctx: ServiceContext, q: PreparedRows, view: MemberView) {
  const target = q.members as NonNullable<PreparedRows['members']>
  return [
    stateStatement(ctx, target.tenantId, view.id),
    ctx.db.all<{ owed: number }>(view.readsTime ? timeOwedSql(target.tenantId, q.panelId, target.at) : sql`SELECT 0 AS owed`),
  ] as const
}

/** The stored key is the view's, the count is kept, and (for a view that reads time) the time step owes nothing. */
const holds = (view: MemberView, [state, owed]: Checked): boolean =>
  state[0] !== undefined &&
  state[0].key === view.key &&
  state[0].total !== null &&
  !(view.readsTime && Number(owed[0]?.owed) === 1)

const membersSql = (q: PreparedRows, viewId: number, after: SQL, limit: number, offset = 0): SQL =>
  memberRowsSql((q.members as NonNullable<PreparedRows['members']>).tenantId, viewId, after, limit, offset)

/**
 * The members after `after` in the view's order, `limit` of them from `offset`, with their records
 * in that order (exported for the tests that read its plan on every target).
 */
export const memberRowsSql = (tenantId: string, viewId: number, after: SQL, limit: number, offset = 0): SQL => sql`
  SELECT ${sql.raw(recordColumns('x'))}, ${sql.raw(ORDER_KEY_NAMES.map((k) => `p.${k}`).join(', '))}, p.row_id AS member_row_id
  FROM (SELECT m.data_source_id, m.key, m.row_id, ${sql.raw(ORDER_KEY_NAMES.map((k) => `m.${k}`).join(', '))}, row_number() OVER () AS n FROM (
    SELECT m.data_source_id, m.key, m.row_id, ${sql.raw(ORDER_KEY_NAMES.map((k) => `m.${k}`).join(', '))}
    FROM view_members m WHERE m.view_id = ${viewId} AND ${after}
    ORDER BY ${sql.raw(memberOrderBy('m'))} LIMIT ${limit} OFFSET ${offset}) m) p
  JOIN records x ON x.data_source_id = p.data_source_id AND x.key = p.key
    AND x.generation = (SELECT current_generation FROM data_sources WHERE id = p.data_source_id)
  WHERE x.tenant_id = ${tenantId}
  ORDER BY p.n`

/**
 * The members after `after` in the view's order, `limit` of them, each as the row the view shows
 * (`view_members.row`, kept by every write: membership.ts `rowJson`), read from the members alone.
 */
export const memberShownRowsSql = (viewId: number, after: SQL, limit: number): SQL => sql`
  SELECT m.row, ${sql.raw(ORDER_KEY_NAMES.map((k) => `m.${k}`).join(', '))}, m.row_id AS member_row_id
  FROM view_members m WHERE m.view_id = ${viewId} AND ${after}
  ORDER BY ${sql.raw(memberOrderBy('m'))} LIMIT ${limit}`

/**
 * The stored member rows are the rows asked for when the query shows exactly the view's shape
 * (the same columns, in the same order) and no virtual column: a work column is computed when the
 * row is read (time changes `_overdue`), so a view that shows one reads its records.
 */
function showsStoredRows(q: PreparedRows, view: MemberView): boolean {
  const shown = (JSON.parse(view.shape) as [string, string | number][]).slice(STORED_ROW_PREFIX)
  return (
    shown.length === q.visible.length && q.visible.every((c, i) => !c.virtual && shown[i][0] === c.name && shown[i][1] === c.id)
  )
}

/** The fixed entries that begin a member row's shape: `_id`, `_key`, `_source`, `_errors`. */
const STORED_ROW_PREFIX = 4

/** A stored member row as the API answers a row (row-shape.ts `toRow`): `_errors` only when there are some. */
function storedRow(text: string): Row {
  const row = JSON.parse(text) as Row
  if (Array.isArray(row._errors) && row._errors.length === 0) delete row._errors
  return row
}

/**
 * Batches of the members in the view's order, each starting after the last member of the one
 * before: the rows as the members store them when they are the rows asked for (`showsStoredRows`:
 * an export then reads no record at all, whatever the view's sort), else the members' records.
 */
async function* memberBatches(
  ctx: ServiceContext,
  q: PreparedRows,
  view: MemberView,
  options: RowBatchOptions,
): AsyncGenerator<Row[]> {
  const size = Math.max(1, Math.min(options.batchSize ?? 1000, 10_000))
  const stored = showsStoredRows(q, view)
  let left = options.maxRows ?? Number.POSITIVE_INFINITY
  let after: SQL = sql`TRUE`
  while (left > 0) {
    const n = Math.min(size, left)
    const members = stored
      ? await ctx.db.all<{ row: string } & Record<string, unknown>>(memberShownRowsSql(view.id, after, n))
      : await ctx.db.all<RecordRow & Record<string, unknown>>(membersSql(q, view.id, after, n))
    if (members.length === 0) return
    yield stored ? members.map((m) => storedRow(m.row as string)) : members.map((r) => toRow(r as RecordRow, q.visible))
    left -= members.length
    if (members.length < n) return
    const last = members[members.length - 1]
    after = membersAfter([...ORDER_KEY_NAMES.map((k) => last[k]), last.member_row_id])
  }
}
