import { type SQL, sql } from 'drizzle-orm'
import { evaluatePath } from '../../connectors/shared/json-path.ts'
import type { SourceRecord } from '../../connectors/types.ts'
import type { DataSourceRow } from './datasources.schemas.ts'

/**
 * Writing records (DATA-ENGINE: Records). Every function here returns statements for the caller's
 * `db.batch`, so records, lease renewal, cursor and sync-run counters commit together.
 */

/** Records per INSERT statement: one JSON parameter each, expanded by SQLite's json_each. */
export const RECORDS_PER_STATEMENT = 1000

/** Keys already given in one sync: duplicates of a keyless record get `#2`, `#3`, … */
export type KeySet = Set<string>

/** A record ready to store: its key and its data as JSON text. */
interface KeyedRecord {
  key: string
  json: string
}

/**
 * A record's key: the `keyField` value, else the connector's key, else a hash of the content.
 * Identical keyless rows stay distinct (`<hash>#2`); rows sharing a key are one record (last wins).
 */
export function keyRecords(records: SourceRecord[], keyField: string | undefined, seen: KeySet): KeyedRecord[] {
  const out: KeyedRecord[] = []
  for (const record of records) {
    const json = JSON.stringify(record.data)
    const byField = keyField === undefined ? undefined : evaluatePath(record.data, keyField)
    let key: string
    if (byField !== undefined && byField !== null && byField !== '') {
      key = typeof byField === 'string' ? byField : JSON.stringify(byField)
    } else if (record.key) {
      key = record.key
    } else {
      const hash = contentHash(json)
      key = hash
      for (let n = 2; seen.has(key); n++) key = `${hash}#${n}`
    }
    seen.add(key)
    out.push({ key, json })
  }
  return out
}

/**
 * Upserts records into one generation of a source: a full sync writes its new generation, an
 * incremental sync the current one. One statement per RECORDS_PER_STATEMENT records.
 */
export function upsertStatements(source: DataSourceRow, generation: number, records: KeyedRecord[], now: string): SQL[] {
  const statements: SQL[] = []
  for (let i = 0; i < records.length; i += RECORDS_PER_STATEMENT) {
    const chunk = records.slice(i, i + RECORDS_PER_STATEMENT)
    const payload = `[${chunk.map((r) => `[${JSON.stringify(r.key)},${r.json}]`).join(',')}]`
    statements.push(sql`
      INSERT INTO records (tenant_id, panel_id, data_source_id, generation, key, data, created_at, updated_at)
      SELECT ${source.tenantId}, ${source.panelId}, ${source.id}, ${generation}, j.value ->> 0, j.value -> 1, ${now}, ${now}
      FROM json_each(${payload}) j WHERE true
      ON CONFLICT (data_source_id, generation, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at`)
  }
  return statements
}

/** Deletes records by key from one generation (incremental deletes, webhook `data.deleted`). */
export function deleteStatements(source: DataSourceRow, generation: number, keys: string[]): SQL[] {
  const statements: SQL[] = []
  for (let i = 0; i < keys.length; i += RECORDS_PER_STATEMENT) {
    const payload = JSON.stringify(keys.slice(i, i + RECORDS_PER_STATEMENT))
    statements.push(sql`
      DELETE FROM records WHERE data_source_id = ${source.id} AND generation = ${generation}
        AND key IN (SELECT value FROM json_each(${payload}))`)
  }
  return statements
}

/** Keys of generations before `generation` that `generation` no longer has (rows deleted by a full sync). */
export const countRemovedKeys = (sourceId: number, generation: number) => sql`
  SELECT count(*) AS n FROM records o
  WHERE o.data_source_id = ${sourceId} AND o.generation < ${generation}
    AND NOT EXISTS (SELECT 1 FROM records n
                    WHERE n.data_source_id = o.data_source_id AND n.generation = ${generation} AND n.key = o.key)`

// --- Internal helpers ---

/**
 * A 106-bit content hash (two 53-bit cyrb53 lanes) as hex: stable across syncs and runtimes,
 * synchronous, and ~20× cheaper per row than a WebCrypto digest. Keys only need to tell records
 * apart, not resist an attacker: a forged collision can only merge two rows of the caller's own source.
 */
function contentHash(text: string): string {
  return lane(text, 0x9e3779b1) + lane(text, 0x85ebca77)
}

function lane(text: string, seed: number): string {
  let h1 = 0xdeadbeef ^ seed
  let h2 = 0x41c6ce57 ^ seed
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ ch, 2654435761)
    h2 = Math.imul(h2 ^ ch, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0')
}
