import { sql } from 'drizzle-orm'
import type { ServiceContext } from '../context.ts'
import { loadPanelMembership } from './membership-plan.ts'
import { memberOrderBy } from './query/member-order.ts'
import type { PreparedRows } from './query/prepare.ts'
import { type RecordRow, recordColumns } from './query/row-shape.ts'
import { queryRowsPage, type RowsPage, type StoredPage } from './query/run.ts'
import { timeOwedSql } from './work-time.ts'

/**
 * A view's page from what the row store already keeps (docs/views-and-rows.md "Access paths"):
 * `view_members` holds the view's rows with their order keys (member-order.ts), walked through one
 * index, and `views.member_count` their number. Only the page's records are then read. It answers
 * only when the stored members are the rows asked for, now:
 *
 * - the request adds nothing to the view's query (prepare.ts `members`);
 * - the view's membership was evaluated with the query and order it has now (its key), and its
 *   order fits in the member's keys;
 * - for a view that reads a column time alone changes (`_overdue`, an expired claim …), the time
 *   step owes its panel nothing (a due date passed since it ran would leave the members behind).
 *
 * The check and the page are read in one batch (one state); otherwise undefined, and the caller runs
 * the row query over the panel (run.ts), which gives the same rows in the same order.
 */

export async function readMemberPage(
  ctx: ServiceContext,
  q: PreparedRows,
  offset: number,
  limit: number,
): Promise<StoredPage | undefined> {
  const target = q.members
  if (!target) return undefined
  const membership = await loadPanelMembership(ctx.db, target.tenantId, q.panelId, { at: target.at, only: target.viewId })
  const view = membership.views.find((v) => v.id === target.viewId)
  if (!view?.where || view.storedKey !== view.key || view.orderAt(target.at) === null) return undefined
  const [state, records, owed] = await ctx.db.batch([
    ctx.db.all<{ key: string | null; total: number | null }>(
      sql`SELECT membership_key AS key, member_count AS total FROM views WHERE id = ${view.id} AND tenant_id = ${target.tenantId}`,
    ),
    ctx.db.all<RecordRow>(sql`
      SELECT ${sql.raw(recordColumns('x'))}
      FROM (SELECT data_source_id, key, row_number() OVER () AS n FROM (
        SELECT m.data_source_id, m.key FROM view_members m WHERE m.view_id = ${view.id}
        ORDER BY ${sql.raw(memberOrderBy('m'))} LIMIT ${limit} OFFSET ${offset})) p
      JOIN records x ON x.data_source_id = p.data_source_id AND x.key = p.key
        AND x.generation = (SELECT current_generation FROM data_sources WHERE id = p.data_source_id)
      WHERE x.tenant_id = ${target.tenantId}
      ORDER BY p.n`),
    ctx.db.all<{ owed: number }>(view.readsTime ? timeOwedSql(target.tenantId, q.panelId, target.at) : sql`SELECT 0 AS owed`),
  ])
  const [stored] = state
  if (!stored || stored.key !== view.key || stored.total === null || Number(owed[0]?.owed) === 1) return undefined
  return { records, total: Number(stored.total) }
}

/** A page of rows: from the view's stored members when they answer it, else from the row query. */
export async function readRowsPage(ctx: ServiceContext, q: PreparedRows, offset: number, limit: number): Promise<RowsPage> {
  return queryRowsPage(ctx, q, offset, limit, await readMemberPage(ctx, q, offset, limit))
}
