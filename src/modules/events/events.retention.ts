import { sql } from 'drizzle-orm'
import { rowsAffected } from '../../db/client.ts'
import type { Deps } from '../../deps.ts'

/** Events deleted per statement of the retention step. */
const PRUNE_BATCH = 1000
/** Statements per scheduler step (both rules together), so one step stays short however much is due. */
const PRUNE_MAX_BATCHES = 20

/**
 * The change feed's retention step (docs/live.md "Retention"; run by the scheduler): deletes events
 * older than EVENTS_RETENTION_DAYS, walking the primary key from the lowest id (ids grow with
 * commits) like the audit's retention, then per tenant the oldest events beyond
 * EVENTS_RETENTION_MAX, along (tenant_id, seq). Bounded batches; a backlog drains over the next
 * steps. `event_sequences` is left alone, so numbering goes on past what was pruned.
 */
export async function pruneEvents(deps: Deps, now: Date = deps.clock.now()): Promise<number> {
  const { retentionDays, retentionMax } = deps.config.events
  const cutoff = new Date(now.getTime() - retentionDays * 86_400_000).toISOString()
  let batches = 0
  let deleted = 0
  while (batches < PRUNE_MAX_BATCHES) {
    batches++
    const n = rowsAffected(
      await deps.db.run(sql`
        DELETE FROM events WHERE id IN (SELECT id FROM events ORDER BY id LIMIT ${PRUNE_BATCH}) AND occurred_at < ${cutoff}`),
    )
    deleted += n
    if (n < PRUNE_BATCH) break
  }
  const over = await deps.db.all<{ tenant_id: string; keep_from: number }>(sql`
    SELECT s.tenant_id, s.last_seq - ${retentionMax} + 1 AS keep_from FROM event_sequences s
    WHERE (SELECT min(seq) FROM events e WHERE e.tenant_id = s.tenant_id) < s.last_seq - ${retentionMax} + 1`)
  for (const { tenant_id: tenantId, keep_from: keepFrom } of over) {
    while (batches < PRUNE_MAX_BATCHES) {
      batches++
      const n = rowsAffected(
        await deps.db.run(sql`
          DELETE FROM events WHERE id IN (
            SELECT id FROM events WHERE tenant_id = ${tenantId} AND seq < ${keepFrom} ORDER BY seq LIMIT ${PRUNE_BATCH})`),
      )
      deleted += n
      if (n < PRUNE_BATCH) break
    }
  }
  return deleted
}
