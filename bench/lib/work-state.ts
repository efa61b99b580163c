import { sql } from 'drizzle-orm'
import type { Deps } from '../../src/deps.ts'
import { refreshWorkStatement } from '../../src/rowstore/work-sql.ts'

/**
 * Work state for the benches of "working the list" (bench:views, bench:sync), written straight in
 * SQL as a work change leaves it: the identity's columns with `version + 1`, then the work copy of
 * its records refreshed (rowstore/work-sql.ts). `count` identities of the panel, spread evenly over
 * its rows (every n-th by id), get a mix: statuses open / in_progress / done in turn, every other
 * one an assignee (one of 7 users), three in four a due date between two days ago and two days
 * ahead (so some are overdue). Answers how many identities it changed.
 */
export async function seedWorkState(db: Deps['db'], panelId: number, count: number): Promise<number> {
  const [{ total }] = await db.all<{ total: number }>(
    sql`SELECT count(*) AS total FROM row_identities WHERE panel_id = ${panelId}`,
  )
  const step = Math.max(1, Math.floor(Number(total) / count))
  const chosen = sql`SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM row_identities
    WHERE panel_id = ${panelId}) WHERE n % ${step} = 0 LIMIT ${count}`
  await db.batch([
    db.run(sql`UPDATE row_identities SET
        status = CASE id % 3 WHEN 0 THEN 'open' WHEN 1 THEN 'in_progress' ELSE 'done' END,
        assignee = CASE WHEN id % 2 = 0 THEN 'user-' || (id % 7) END,
        due_at = CASE WHEN id % 4 <> 0 THEN strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ((id % 97) - 48) || ' hours') END,
        version = version + 1, work_updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), work_updated_by = 'bench'
      WHERE id IN (${chosen})`),
    db.run(refreshWorkStatement(sql`SELECT id FROM row_identities WHERE panel_id = ${panelId} AND version > 0`)),
  ])
  return workedRows(db, panelId)
}

/**
 * Rows of the panel's visible generations that carry a work copy of an identity that was worked
 * (`records.work` not null, `version > 0`): after a resync, the work that survived it.
 */
export async function workedRows(db: Deps['db'], panelId: number): Promise<number> {
  const [{ n }] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM records r
    JOIN data_sources s ON s.id = r.data_source_id AND r.generation = s.current_generation
    JOIN row_identities i ON i.id = r.row_id
    WHERE r.panel_id = ${panelId} AND r.work IS NOT NULL AND i.version > 0`)
  return Number(n)
}
