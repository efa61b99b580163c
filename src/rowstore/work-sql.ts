import { type SQL, sql } from 'drizzle-orm'
import { appendEventsFrom } from './events.ts'

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
 * A removed source's identities with their work state and comments (docs/worklist.md "Comments"),
 * in the batch that removes it, whether or not foreign keys cascade (docs/runtimes.md).
 */
export const dropIdentitiesOfSource = (dataSourceId: number): SQL[] => [
  sql`DELETE FROM row_comments WHERE row_id IN (SELECT id FROM row_identities WHERE data_source_id = ${dataSourceId})`,
  sql`DELETE FROM row_identities WHERE data_source_id = ${dataSourceId}`,
]

/** The work fields a change lists in `changed` (WORKLIST.md §4). */
export const WORK_FIELDS = ['status', 'assignee', 'claimedAt', 'claimExpiresAt', 'dueAt', 'snoozedUntil'] as const

/** The work state of the identity aliased `i` as the API answers it (`_work`, events), as JSON. */
export const workStateJson = (i: string): SQL =>
  sql.raw(`json_object('status', ${i}.status, 'assignee', ${i}.assignee, 'claimedAt', ${i}.claimed_at,
    'claimExpiresAt', ${i}.claim_expires_at, 'dueAt', ${i}.due_at, 'snoozedUntil', ${i}.snoozed_until,
    'version', ${i}.version, 'updatedAt', ${i}.work_updated_at, 'updatedBy', ${i}.work_updated_by,
    'commentCount', ${i}.comment_count)`)

/** Scratch rows of a work change (`pending_changes` of view -1): the identities it changes, each with its state before. */
const CAPTURED = -1

/** The ids of the identities a work change captured. */
export const capturedIds = (token: string): SQL =>
  sql`SELECT row_id FROM pending_changes WHERE token = ${token} AND view_id = ${CAPTURED}`

/**
 * A work change, as statements for the write protocol (write.ts `changeWork`), all in one batch:
 *
 * - `capture`: the identities `pick` selects (evaluated in the transaction, so the condition that
 *   makes the write conditional — a version, nobody holding the row — is read where it is written),
 *   each with its state before;
 * - `listed`: the same identities listed as changed for the views' membership step (write.ts
 *   `changeWork` runs it only when a view can move);
 * - `apply`: the update of those identities (`set`, version + 1, who and when), the work copy of
 *   their records, one `row.work_updated` each with the fields that changed, and a change record
 *   (entityType `row`) each.
 */
export function workChangeStatements(change: {
  token: string
  tenantId: string
  panelId: number
  pick: SQL
  set: SQL
  at: string
  by: string
  cause: 'claim' | 'release' | 'lease_expired' | 'patch' | 'next' | 'sla'
  /** The change record's metadata (who, from where). */
  metadata: string
}): { capture: SQL[]; listed: SQL[]; apply: SQL[] } {
  const { token, at, by } = change
  const ids = capturedIds(token)
  const [captured, listed] = captureStatements(change)
  const fields = JSON.stringify(WORK_FIELDS)
  const apply = [
    sql`UPDATE row_identities SET ${change.set}, version = version + 1, work_updated_at = ${at}, work_updated_by = ${by}
      WHERE id IN (${ids})`,
    refreshWorkStatement(ids),
    // The fields that changed, `{ field: { from, to } }`, worked out once for the event and the change record.
    sql`UPDATE pending_changes SET changed = (SELECT json_group_object(f.value, json_object(
          'from', json(pending_changes.row -> ('$.' || f.value)), 'to', json(a.w -> ('$.' || f.value))))
        FROM (SELECT ${workStateJson('i')} AS w FROM row_identities i WHERE i.id = pending_changes.row_id) a, json_each(${fields}) f
        WHERE (pending_changes.row -> ('$.' || f.value)) IS NOT (a.w -> ('$.' || f.value)))
      WHERE token = ${token} AND view_id = ${CAPTURED}`,
    ...appendEventsFrom(
      change.tenantId,
      sql`SELECT i.id AS ord, 'row.work_updated' AS type, ${change.panelId} AS panel_id, NULL AS view_id,
          i.data_source_id AS data_source_id, json_object('rowId', i.id, 'key', i.key, 'panelId', i.panel_id,
          'work', json(${workStateJson('i')}), 'changed', json(p.changed), 'by', ${by}, 'cause', ${change.cause}) AS data
        FROM pending_changes p JOIN row_identities i ON i.id = p.row_id
        WHERE p.token = ${token} AND p.view_id = ${CAPTURED}`,
      at,
    ),
    sql`INSERT INTO changes (tenant_id, user_id, panel_id, entity_type, entity_id, action, changes, metadata, created_at)
      SELECT ${change.tenantId}, ${by}, ${change.panelId}, 'row', p.row_id, 'UPDATE',
        (SELECT json_group_object(c.key, json_object('oldValue', c.value -> '$.from', 'newValue', c.value -> '$.to'))
          FROM json_each(p.changed) c),
        ${change.metadata}, ${at}
      FROM pending_changes p WHERE p.token = ${token} AND p.view_id = ${CAPTURED}`,
  ]
  return { capture: [captured], listed: [listed], apply }
}

/**
 * A change of the work state's derived field — the comment count (WORKLIST.md §3: comments do not
 * change the work state's `version`) — as statements for `changeWork`: the identities `pick`
 * selects are captured and listed for the views' membership step as a work change's are, and
 * `apply` sets `set` on them and refreshes their records' work copy, so `_commentCount` moves the
 * views that show or filter on it. Unlike `workChangeStatements` the version, `updatedAt` and
 * `updatedBy` stay, and no `row.work_updated` or `row` change record is written: the caller adds
 * its own statements (they may read the captured ids: `capturedIds`).
 */
export function derivedWorkStatements(change: { token: string; tenantId: string; panelId: number; pick: SQL; set: SQL }): {
  capture: SQL[]
  apply: SQL[]
} {
  const ids = capturedIds(change.token)
  return {
    capture: captureStatements(change),
    apply: [sql`UPDATE row_identities SET ${change.set} WHERE id IN (${ids})`, refreshWorkStatement(ids)],
  }
}

/** What a work change captured: the identity ids it changed (none: its condition did not hold). */
export const capturedSelect = (token: string): SQL =>
  sql`SELECT p.row_id AS id, ${workStateJson('i')} AS work FROM pending_changes p JOIN row_identities i ON i.id = p.row_id
    WHERE p.token = ${token} AND p.view_id = ${CAPTURED} ORDER BY p.row_id`

/** The statements that remove a panel's identities with their work and comments, in the batch that deletes the panel. */
export const panelWorkRemoval = (tenantId: string, panelId: number): SQL[] => [
  sql`DELETE FROM row_comments WHERE row_id IN (SELECT id FROM row_identities WHERE tenant_id = ${tenantId} AND panel_id = ${panelId})`,
  sql`DELETE FROM row_identities WHERE tenant_id = ${tenantId} AND panel_id = ${panelId}`,
]

// --- Internal helpers ---

/**
 * The identities `pick` selects, each with its state before (view -1), and listed as changed for
 * the views' membership step (view 0) — evaluated in the transaction of the change.
 */
function captureStatements(change: { token: string; tenantId: string; panelId: number; pick: SQL }): SQL[] {
  const { token } = change
  return [
    sql`INSERT INTO pending_changes (token, view_id, data_source_id, key, kind, row_id, row)
      SELECT ${token}, ${CAPTURED}, i.data_source_id, i.key, 'work', i.id, ${workStateJson('i')}
      FROM row_identities i WHERE i.id IN (${change.pick}) AND i.tenant_id = ${change.tenantId} AND i.panel_id = ${change.panelId}`,
    sql`INSERT OR IGNORE INTO pending_changes (token, view_id, data_source_id, key, kind)
      SELECT ${token}, 0, data_source_id, key, 'work' FROM pending_changes WHERE token = ${token} AND view_id = ${CAPTURED}`,
  ]
}
