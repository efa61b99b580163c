import { and, eq, ne, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import { views } from '../../db/schema.ts'
import { isoNow } from '../../lib/clock.ts'
import { prepareViewRows } from '../views/views.query.ts'
import type { ViewRow } from '../views/views.schemas.ts'

/**
 * Notifications that matter (issue 5 item 8; docs/import-export.md): after a sync or an import,
 * the owner of each view of the panel hears how many rows entered or left the view ("12 rows
 * entered, 3 left"), never for the actor's own views, at most once per event (a dedupe key per
 * view and event).
 *
 * Membership is a key set per view, never the rows: a 53-bit hash of each member's identity. For
 * a sync the identity is (data source, record key), so it survives the generation switch of a
 * full sync; the rows are read with the view query layer's compiled scope in id-keyset batches.
 * An import touches only its own records, so it compares just those, by record id.
 */

/** Per view (of users other than the actor): the hashes of its members' identities. */
export interface MembershipSnapshot {
  views: Map<number, Set<number>>
}

/** Rows read per membership query. */
const BATCH = 5000

/**
 * Membership of every view of the panel owned by someone other than the actor. With `ids`, only
 * those records are considered (an import's own records) and identities are record ids.
 */
export async function snapshotViewMembership(ctx: ServiceContext, panelId: number, ids?: number[]): Promise<MembershipSnapshot> {
  const snapshot: MembershipSnapshot = { views: new Map() }
  for (const view of await othersViews(ctx, panelId)) snapshot.views.set(view.id, await membersOf(ctx, view, ids))
  return snapshot
}

/**
 * Compares each view's membership now with `before` and notifies the owners of views whose rows
 * changed (DATA_CHANGED, info). `eventKey` names the sync run or import, so repeating the call for
 * one event notifies nobody twice. `ids` as for the snapshot. Answers the notifications written.
 */
export async function notifyViewMembershipChanges(
  ctx: ServiceContext,
  panelId: number,
  before: MembershipSnapshot,
  eventKey: string,
  options: { ids?: number[]; cause?: string } = {},
): Promise<number> {
  let written = 0
  for (const view of await othersViews(ctx, panelId)) {
    const was = before.views.get(view.id) ?? new Set<number>()
    const now = await membersOf(ctx, view, options.ids)
    let entered = 0
    let left = 0
    for (const h of now) if (!was.has(h)) entered++
    for (const h of was) if (!now.has(h)) left++
    if (entered === 0 && left === 0) continue
    const message = `View "${view.name}": ${describe(entered, left)}${options.cause ? ` (${options.cause})` : ''}`
    const result = await ctx.db.run(sql`
      INSERT INTO notifications (tenant_id, user_id, view_id, type, impact, message, is_read, dedupe_key, created_at)
      VALUES (${view.tenantId}, ${view.userId}, ${view.id}, 'DATA_CHANGED', 'info', ${message}, 0,
              ${`membership:${view.id}:${eventKey}`}, ${isoNow(ctx.clock)})
      ON CONFLICT DO NOTHING`)
    written += rowsAffected(result)
  }
  return written
}

/** "12 rows entered, 3 left", "1 row entered", "3 rows left". */
export function describe(entered: number, left: number): string {
  const rows = (n: number) => `${n} ${n === 1 ? 'row' : 'rows'}`
  if (entered > 0 && left > 0) return `${rows(entered)} entered, ${left} left`
  return entered > 0 ? `${rows(entered)} entered` : `${rows(left)} left`
}

// --- Internal helpers ---

function othersViews(ctx: ServiceContext, panelId: number): Promise<ViewRow[]> {
  return ctx.db
    .select()
    .from(views)
    .where(and(eq(views.tenantId, ctx.scope.tenantId), eq(views.panelId, panelId), ne(views.userId, ctx.scope.userId)))
}

/**
 * The view's members as identity hashes. A view whose query no longer compiles (e.g. a filter on
 * a deleted column) has no members to compare, and is skipped the same way before and after.
 */
async function membersOf(ctx: ServiceContext, view: ViewRow, ids?: number[]): Promise<Set<number>> {
  const members = new Set<number>()
  let q: Awaited<ReturnType<typeof prepareViewRows>>
  try {
    q = await prepareViewRows(ctx, view)
  } catch {
    return members
  }
  if (ids) {
    for (let i = 0; i < ids.length; i += BATCH) {
      const chunk = JSON.stringify(ids.slice(i, i + BATCH))
      const rows = await ctx.db.all<{ id: number }>(
        sql`SELECT r.id ${q.scope} AND r.id IN (SELECT value FROM json_each(${chunk}))`,
      )
      for (const r of rows) members.add(Number(r.id))
    }
    return members
  }
  let after = 0
  for (;;) {
    const rows = await ctx.db.all<{ id: number; source: number; key: string }>(
      sql`SELECT r.id, r.data_source_id AS source, r.key ${q.idScope} AND r.id > ${after} ORDER BY r.id LIMIT ${BATCH}`,
    )
    for (const r of rows) members.add(hash53(`${r.source}:${r.key}`))
    if (rows.length < BATCH) return members
    after = Number(rows[rows.length - 1].id)
  }
}

/** cyrb53: a fast 53-bit string hash (a collision among 10^6 members has odds below 1 in 10^4). */
function hash53(text: string): number {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}
