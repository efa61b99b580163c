import { type SQL, sql } from 'drizzle-orm'

/**
 * The SQL that keeps rows and their lasting identities together (docs/worklist.md "Row identity"):
 * every record written gets the id of its identity `(data source, key)` in `row_identities` (made
 * on first sight) as its `row_id`, and a JSON copy of the identity's work state in `work`, which the
 * panel's row index holds for the virtual columns (query/virtual.ts).
 */

/**
 * The work copy of the identity aliased `i`: null while never worked (no work change, no comment),
 * else its fields as query/virtual.ts `WorkCopy` reads them.
 */
export const workJson = (i: string): SQL =>
  sql.raw(`(CASE WHEN ${i}.version > 0 OR ${i}.comment_count > 0 THEN json_object('status', ${i}.status,
    'assignee', ${i}.assignee, 'claimExpiresAt', ${i}.claim_expires_at, 'dueAt', ${i}.due_at,
    'snoozedUntil', ${i}.snoozed_until, 'commentCount', ${i}.comment_count) END)`)

/** The identities of keys about to be written into a source (those it has keep their id), only while the source exists. */
export function identityStatement(
  target: { tenantId: string; panelId: number; dataSourceId: number },
  keysJson: string,
  now: string,
  exists: SQL,
): SQL {
  return sql`INSERT INTO row_identities (tenant_id, panel_id, data_source_id, key, created_at)
    SELECT ${target.tenantId}, ${target.panelId}, ${target.dataSourceId}, j.value, ${now} FROM json_each(${keysJson}) j
    WHERE ${exists}
    ON CONFLICT (data_source_id, key) DO NOTHING`
}

/**
 * The work copy of the visible records of the identities `ids` refreshed from their work state:
 * after a work change, in its batch.
 */
export const refreshWorkStatement = (ids: SQL): SQL =>
  sql`UPDATE records SET work = (SELECT ${workJson('i')} FROM row_identities i WHERE i.id = records.row_id)
    WHERE row_id IN (${ids})`

/**
 * The statements that remove a data source's identities with their work and comments, in the batch
 * that deletes the source: the foreign keys' cascade is a safety net only (docs/runtimes.md
 * "Connection state"), so a connection without them leaves no orphan either.
 */
export const sourceIdentitiesRemoval = (dataSourceId: number): SQL[] => [
  sql`DELETE FROM row_comments WHERE row_id IN (SELECT id FROM row_identities WHERE data_source_id = ${dataSourceId})`,
  sql`DELETE FROM row_identities WHERE data_source_id = ${dataSourceId}`,
]
