import { type SQL, sql } from 'drizzle-orm'
import { RECORDS_PER_STATEMENT, type RecordTarget, sourceExists } from './record-sql.ts'

/**
 * Resources a panel's ViewDefinition gives no row, held apart (`held_records`; docs/sql-on-fhir.md
 * "Decision: a resource the view gives no row is held"). They are no rows: no row reader (queries,
 * membership, identities, counts) reads this table. The row store keeps it in step with the rows on
 * every write path: an upsert holds a record whose view gives no row and releases one that has rows
 * again, a delete by key, a full sync's switch and a failed full sync drop theirs with the rows', a
 * source's removal its own, and a recompute (a replaced or removed view) stores held records again
 * as rows, or holds those whose rows all vanished.
 */

/** A record held: its key and data as JSON text. */
export interface HeldRecord {
  key: string
  json: string
}

/**
 * Statements that make `held` exactly the held records among `keys` in one generation: the others'
 * entries go (they have rows now), `held` are stored. A held record keeps the time of the same
 * resource, with the same data, in the source's visible generation (held, or stored as rows), so
 * `$viewdefinition-run`'s `_since` finds only what changed. Only a panel defined by a
 * ViewDefinition calls this: its held records are few, and pay the look-up.
 */
export function holdStatements(target: RecordTarget, keys: readonly string[], held: readonly HeldRecord[], now: string): SQL[] {
  const statements: SQL[] = []
  const heldKeys = new Set(held.map((r) => r.key))
  const released = keys.filter((k) => !heldKeys.has(k))
  for (let i = 0; i < released.length; i += RECORDS_PER_STATEMENT) {
    statements.push(releaseStatement(target.dataSourceId, target.generation, released.slice(i, i + RECORDS_PER_STATEMENT)))
  }
  for (let i = 0; i < held.length; i += RECORDS_PER_STATEMENT) {
    const items = held.slice(i, i + RECORDS_PER_STATEMENT).map((r) => `[${JSON.stringify(r.key)},${r.json}]`)
    statements.push(sql`
      INSERT INTO held_records (tenant_id, panel_id, data_source_id, generation, key, data, created_at, updated_at)
      SELECT ${target.tenantId}, ${target.panelId}, ${target.dataSourceId}, ${target.generation}, j.value ->> 0, j.value -> 1,
        ${now}, ${keptTime(target.dataSourceId, now)}
      FROM json_each(${`[${items.join(',')}]`}) j WHERE ${sourceExists(target.dataSourceId)}
      ON CONFLICT (data_source_id, generation, key) DO UPDATE SET data = excluded.data,
        updated_at = CASE WHEN held_records.data = excluded.data THEN held_records.updated_at ELSE excluded.updated_at END`)
  }
  return statements
}

/** Held records of one generation released by key (deleted records, or records that have rows again). */
export const releaseStatement = (dataSourceId: number, generation: number, keys: readonly string[]) => sql`
  DELETE FROM held_records WHERE data_source_id = ${dataSourceId} AND generation = ${generation}
    AND key IN (SELECT value FROM json_each(${JSON.stringify(keys)}))`

/** Held records released by id (a recompute stored them as rows). */
export const releaseByIds = (tenantId: string, ids: readonly number[]) => sql`
  DELETE FROM held_records WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)})) AND +tenant_id = ${tenantId}`

/** A generation's held records dropped with its rows (a failed full sync's, a crashed run's leftovers). */
export const dropHeldGeneration = (dataSourceId: number, generation: number) =>
  sql`DELETE FROM held_records WHERE data_source_id = ${dataSourceId} AND generation = ${generation}`

/** Held records of generations before `to`, dropped with their rows once `to` is visible (a full sync's switch). */
export const dropHeldOlder = (dataSourceId: number, to: number) => sql`
  DELETE FROM held_records WHERE data_source_id = ${dataSourceId} AND generation < ${to}
    AND (SELECT current_generation FROM data_sources WHERE id = ${dataSourceId}) = ${to}`

/** A source's held records, removed with it. */
export const dropHeldOfSource = (dataSourceId: number) => sql`DELETE FROM held_records WHERE data_source_id = ${dataSourceId}`

/** A held record as a recompute reads it. */
export interface ReadHeld {
  id: number
  data_source_id: number
  generation: number
  key: string
  data: string
}

/** A page of a panel's held records, by id after `after`. */
export const heldPage = (tenantId: string, panelId: number, after: number, limit: number) => sql`
  SELECT id, data_source_id, generation, key, data FROM held_records
  WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} AND id > ${after}
  ORDER BY id LIMIT ${limit}`

// --- Internal helpers ---

/**
 * The time of the resource `j.value ->> 0` with data `j.value -> 1` in the source's visible
 * generation: held there, or stored as its rows (by record key, or its one row by key); else now.
 */
const keptTime = (dataSourceId: number, now: string) => {
  const visible = sql`p.data_source_id = ${dataSourceId}
    AND p.generation = (SELECT current_generation FROM data_sources WHERE id = ${dataSourceId}) AND p.data = j.value -> 1`
  return sql`coalesce(
    (SELECT p.updated_at FROM held_records p WHERE ${visible} AND p.key = j.value ->> 0),
    (SELECT max(p.updated_at) FROM records p WHERE ${visible} AND p.record_key = j.value ->> 0),
    (SELECT p.updated_at FROM records p WHERE ${visible} AND p.key = j.value ->> 0),
    ${now})`
}
