import { type SQL, sql } from 'drizzle-orm'
import type { RowWrite } from './membership.ts'

/**
 * What a write changed, as `pending_changes` rows of view 0 (identity = source + record key) with
 * the kind `panel.rows_changed` counts: inserted, updated or deleted. Each function answers
 * statements that go into the write's batch BEFORE its data statements (they compare with the
 * rows as they were), except where said. The membership step (membership.ts) reads them after.
 */

/** Keys per statement: one JSON parameter each. */
const KEYS_PER_STATEMENT = 1000

const insert = (write: RowWrite) =>
  sql`INSERT OR IGNORE INTO pending_changes (token, view_id, data_source_id, key, kind) SELECT ${write.token}, 0, `

/**
 * A full sync's switch from generation `from` to `to` (before the switch): keys that are new, keys
 * whose cells or errors differ, and keys the new generation lacks. Keys whose rows are the same
 * are not listed, so a sync that changed nothing moves no membership. Only while `when` holds
 * (the run still holds the source's lease).
 */
export function generationSwitchIdentities(
  write: RowWrite,
  sourceId: number,
  from: number,
  to: number,
  when: SQL = sql`1`,
): SQL[] {
  return [
    sql`${insert(write)}${sourceId}, n.key, CASE WHEN o.id IS NULL THEN 'inserted' ELSE 'updated' END
      FROM records n LEFT JOIN records o ON o.data_source_id = ${sourceId} AND o.generation = ${from} AND o.key = n.key
      WHERE n.data_source_id = ${sourceId} AND n.generation = ${to}
        AND (o.id IS NULL OR o.cells IS NOT n.cells OR o.errors IS NOT n.errors) AND ${when}`,
    sql`${insert(write)}${sourceId}, o.key, 'deleted' FROM records o
      WHERE o.data_source_id = ${sourceId} AND o.generation = ${from}
        AND NOT EXISTS (SELECT 1 FROM records n WHERE n.data_source_id = ${sourceId} AND n.generation = ${to} AND n.key = o.key)
        AND ${when}`,
  ]
}

/**
 * Records about to be written by key into the visible generation: updated when the key is there,
 * else inserted; with the rows a record of a ViewDefinition panel holds now (by `record_key`),
 * which the write may rewrite or remove. `writtenRowIdentities` adds the rows such a record gets.
 */
export function upsertIdentities(write: RowWrite, sourceId: number, generation: number, keys: readonly string[]): SQL[] {
  return chunks(keys).flatMap((json) => [
    sql`${insert(write)}${sourceId}, j.value,
      CASE WHEN EXISTS (SELECT 1 FROM records r WHERE r.data_source_id = ${sourceId} AND r.generation = ${generation}
        AND r.key = j.value) THEN 'updated' ELSE 'inserted' END
      FROM json_each(${json}) j`,
    viewRowsOf(write, sourceId, generation, json, 'updated'),
  ])
}

/**
 * After the write: the rows records of a ViewDefinition panel were stored as (`record_key`), those
 * not listed before it being inserted. Nothing for other panels.
 */
export function writtenRowIdentities(write: RowWrite, sourceId: number, generation: number, keys: readonly string[]): SQL[] {
  return chunks(keys).map((json) => viewRowsOf(write, sourceId, generation, json, 'inserted'))
}

/** Records about to be deleted by key from the visible generation (keys not there are no change), and their view rows. */
export function deleteIdentities(write: RowWrite, sourceId: number, generation: number, keys: readonly string[]): SQL[] {
  return chunks(keys).flatMap((json) => [
    sql`${insert(write)}${sourceId}, r.key, 'deleted' FROM json_each(${json}) j
      JOIN records r ON r.data_source_id = ${sourceId} AND r.generation = ${generation} AND r.key = j.value`,
    viewRowsOf(write, sourceId, generation, json, 'deleted'),
  ])
}

/** Every visible record of a source about to be removed with it. */
export function sourceRemovalIdentities(write: RowWrite, sourceId: number): SQL[] {
  return [
    sql`${insert(write)}${sourceId}, r.key, 'deleted' FROM records r
      WHERE r.data_source_id = ${sourceId}
        AND r.generation = (SELECT current_generation FROM data_sources WHERE id = ${sourceId})`,
  ]
}

/** Records rewritten in place, by id (recomputes, import updates): updated. Before or after the write. */
export function recordIdentities(write: RowWrite, ids: readonly number[]): SQL[] {
  return chunks(ids).map(
    (json) => sql`INSERT OR IGNORE INTO pending_changes (token, view_id, data_source_id, key, kind)
      SELECT ${write.token}, 0, r.data_source_id, r.key, 'updated' FROM json_each(${json}) j
      JOIN records r ON r.id = j.value AND +r.tenant_id = ${write.tenantId}`,
  )
}

/** The stored rows of the given records of a ViewDefinition panel (`record_key`), as `kind`. */
const viewRowsOf = (write: RowWrite, sourceId: number, generation: number, json: string, kind: string) =>
  sql`${insert(write)}${sourceId}, r.key, ${kind} FROM json_each(${json}) j
    JOIN records r ON r.data_source_id = ${sourceId} AND r.generation = ${generation} AND r.record_key = j.value`

function chunks(values: readonly (string | number)[]): string[] {
  const out: string[] = []
  for (let i = 0; i < values.length; i += KEYS_PER_STATEMENT) out.push(JSON.stringify(values.slice(i, i + KEYS_PER_STATEMENT)))
  return out
}
