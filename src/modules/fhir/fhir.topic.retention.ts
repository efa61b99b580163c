import { sql } from 'drizzle-orm'
import type { ServiceDeps } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'

/** Event numbers forgotten per statement, and statements per scheduler step. */
const PRUNE_BATCH = 1000
const PRUNE_MAX_BATCHES = 10

/**
 * Forgets the event numbers of FHIR topic subscriptions whose events the change feed's retention
 * removed (docs/fhir.md "$status and $events"): `$events` cannot replay them any more. Numbering is
 * unaffected (it counts on from `fhir_topic_subscriptions.event_count`). Bounded per step.
 */
export async function pruneFhirTopicEvents(deps: ServiceDeps): Promise<number> {
  let deleted = 0
  for (let batch = 0; batch < PRUNE_MAX_BATCHES; batch++) {
    const n = rowsAffected(
      await deps.db.run(sql`
        DELETE FROM fhir_topic_events WHERE rowid IN (
          SELECT t.rowid FROM fhir_topic_events t JOIN subscriptions s ON s.id = t.subscription_id
          WHERE t.event_seq < coalesce((SELECT min(seq) FROM events e WHERE e.tenant_id = s.tenant_id),
                                       (SELECT last_seq + 1 FROM event_sequences q WHERE q.tenant_id = s.tenant_id))
          LIMIT ${PRUNE_BATCH})`),
    )
    deleted += n
    if (n < PRUNE_BATCH) break
  }
  return deleted
}
