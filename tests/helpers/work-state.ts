import { sql } from 'drizzle-orm'
import { runBatch } from '../../src/db/client.ts'
import { refreshWorkStatement } from '../../src/rowstore/work-sql.ts'
import type { TestApp } from './app.ts'

/**
 * Work state set straight in the database, for tests of what reads it (virtual columns, row
 * identity) written before the endpoints that change work exist. It does what a work change does
 * to the stored rows: the identity's fields set, its version raised by one, and the work copy of
 * its records refreshed (rowstore/work-sql.ts), in one batch. It emits no event, writes no change
 * record and checks nothing (no workflow status check, no ETag): replace it by the work endpoints
 * where a test needs those. Without a change record the panel's data version does not move, so a
 * row query's summary (total, groups, aggregations; rowstore/query/summary.ts) cached before the
 * call is answered until the panel's next write: set work state before reading it.
 */

/** The work fields a test may set; a field left out keeps its value. */
export interface WorkState {
  status?: string
  assignee?: string | null
  claimedAt?: string | null
  claimExpiresAt?: string | null
  dueAt?: string | null
  snoozedUntil?: string | null
  commentCount?: number
}

const COLUMNS: Record<keyof WorkState, string> = {
  status: 'status',
  assignee: 'assignee',
  claimedAt: 'claimed_at',
  claimExpiresAt: 'claim_expires_at',
  dueAt: 'due_at',
  snoozedUntil: 'snoozed_until',
  commentCount: 'comment_count',
}

/** Sets the work state of the row whose `_id` is `rowId` (its identity), as a work change would. */
export async function setWorkState(t: TestApp, rowId: number, work: WorkState): Promise<void> {
  const sets = (Object.keys(work) as (keyof WorkState)[]).map((f) => sql`${sql.raw(COLUMNS[f])} = ${work[f] ?? null}`)
  await runBatch(t.deps.db, [
    sql`UPDATE row_identities SET ${sql.join([...sets, sql`version = version + 1`], sql`, `)} WHERE id = ${rowId}`,
    refreshWorkStatement(sql`${rowId}`),
  ])
}

/** The stored work state of an identity (null: no such identity), as the database holds it. */
export async function storedWorkState(t: TestApp, rowId: number) {
  const [row] = await t.deps.db.all<{ status: string; assignee: string | null; due_at: string | null; version: number }>(
    sql`SELECT status, assignee, due_at, version FROM row_identities WHERE id = ${rowId}`,
  )
  return row ?? null
}
