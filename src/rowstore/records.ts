import { type SQL, sql } from 'drizzle-orm'
import { evaluatePath } from '../lib/formats/json-path.ts'
import type { GenerationDigest } from './digest.ts'
import { type StoredRow, staleRowStatements, storedRowsOf } from './expand.ts'
import { dropHeldGeneration, type HeldRecord, holdStatements, releaseStatement } from './held.ts'
import { type PanelPlan, prepareRows, rowOf } from './materialise.ts'
import { insertRowStatements, RECORDS_PER_STATEMENT, type RowPayload } from './record-sql.ts'

/**
 * Writing records (DATA-ENGINE: Records). Every function here returns statements for the caller's
 * `db.batch`, so records, lease renewal, cursor and sync-run counters commit together.
 */

/** The source records are written for: its id, tenant and panel. */
export interface RowSource {
  id: number
  tenantId: string
  panelId: number
  /** The visible generation, when the writer knows it: 0 (never synced) has no row whose time a write could keep. */
  currentGeneration?: number
}

/**
 * Content hashes already given in one sync, so a duplicate keyless record gets `#2`, `#3`, …
 * Memory stays small for millions of rows: a 32-bit fingerprint per hash (4–8 bytes a row), plus a
 * count for the hashes seen twice. A fingerprint collision (about one row in 10,000 at a million
 * rows) only makes a distinct row `<its hash>#2`, which is still a unique, stable key.
 */
export interface KeySet {
  fingerprints: FingerprintSet
  repeats: Map<string, number>
}

export const newKeySet = (): KeySet => ({ fingerprints: new FingerprintSet(), repeats: new Map() })

/** A set of non-zero 32-bit fingerprints in one open-addressing Uint32Array, at most half full. */
export class FingerprintSet {
  private slots = new Uint32Array(1 << 12)
  private size = 0

  /** Adds `fingerprint` (a 32-bit unsigned integer; 0 counts as 1); false when it was there already. */
  add(fingerprint: number): boolean {
    const f = fingerprint >>> 0 || 1
    if ((this.size + 1) * 2 > this.slots.length) this.grow()
    const mask = this.slots.length - 1
    for (let i = (Math.imul(f, 0x9e3779b1) >>> 0) & mask; ; i = (i + 1) & mask) {
      const v = this.slots[i]
      if (v === f) return false
      if (v === 0) {
        this.slots[i] = f
        this.size++
        return true
      }
    }
  }

  private grow() {
    const old = this.slots
    this.slots = new Uint32Array(old.length * 2)
    this.size = 0
    for (const v of old) if (v !== 0) this.add(v)
  }
}

/** Hex digits of SHA-256 kept in a content key: 128 bits, half the index size of the full digest. */
const KEY_HEX_DIGITS = 32

/**
 * A record as a writer hands it to the row store: its data, the key its source gave it (if any),
 * and whether it was deleted. The row store's own type, so it depends on no connector; a
 * connector's `SourceRecord` has this shape, and so do a webhook's records.
 */
export interface InputRecord {
  key?: string
  data: Record<string, unknown>
  deleted?: boolean
}

/** A record ready to store: its key, its data and the data as JSON text. */
export interface KeyedRecord {
  key: string
  data: Record<string, unknown>
  json: string
}

/** What turns records into rows as they are written (DATA-ENGINE: cells computed on write). */
export interface RowWriter {
  plan: PanelPlan
  now: Date
  /** A full sync's digest of the rows it stores (digest.ts). */
  digest?: GenerationDigest
}

/** SHA-256 hex of a text: the runtime's synchronous digest, else WebCrypto (the same digest). */
export type Digest = ((text: string) => string) | undefined

/**
 * A record's key: the `keyField` value, else the connector's key, else the SHA-256 of the content
 * as JSON (first 128 bits, hex). Identical keyless rows stay distinct (`<hash>#2`); rows sharing a
 * key are one record (last wins).
 */
export async function keyRecords(
  records: readonly InputRecord[],
  keyField: string | undefined,
  seen: KeySet,
  digest: Digest,
): Promise<KeyedRecord[]> {
  const out: KeyedRecord[] = []
  const unkeyed: number[] = []
  for (const record of records) {
    const json = JSON.stringify(record.data)
    const byField = keyField === undefined ? undefined : evaluatePath(record.data, keyField)
    let key = ''
    if (byField !== undefined && byField !== null && byField !== '') {
      key = typeof byField === 'string' ? byField : JSON.stringify(byField)
    } else if (record.key) {
      key = record.key
    } else {
      unkeyed.push(out.length)
    }
    out.push({ key, data: record.data, json })
  }
  const hashes = await contentHashes(
    unkeyed.map((i) => out[i].json),
    digest,
  )
  unkeyed.forEach((i, n) => {
    out[i].key = distinctKey(hashes[n], seen)
  })
  return out
}

/** Content keys of JSON texts: the first 128 bits of their SHA-256, in hex (the same on every runtime). */
export async function contentHashes(texts: string[], digest: Digest): Promise<string[]> {
  const full = digest ? texts.map(digest) : await Promise.all(texts.map(webSha256))
  return full.map((h) => h.slice(0, KEY_HEX_DIGITS))
}

/**
 * Upserts records into one generation of a source, with their materialised rows (cells, errors and
 * the columns version they were computed with): a full sync writes its new generation, an
 * incremental sync the current one. A record is one row, or in a panel defined by a ViewDefinition
 * the view's rows (expand.ts), replacing the rows it had.
 */
export async function upsertStatements(
  source: RowSource,
  generation: number,
  records: readonly KeyedRecord[],
  now: string,
  rows: RowWriter,
): Promise<SQL[]> {
  await prepareRows(
    rows.plan,
    records.map((r) => r.data),
  )
  // A panel not defined by a ViewDefinition stores each record as its one row, as it is. In one
  // that is, a record the view gives no row is held (held.ts), so a changed view can store it again.
  // By key: of records sharing a key, the last is the record (keyRecords).
  const holds = new Map<string, HeldRecord | null>()
  const stored: readonly (KeyedRecord & Partial<StoredRow>)[] = rows.plan.view
    ? records.flatMap((r) => {
        const out = storedRowsOf(rows.plan.view, source.id, r)
        holds.set(r.key, out.length === 0 ? r : null)
        return out
      })
    : records
  const payload = stored.map((r): RowPayload => {
    const row = rowOf(rows.plan, source.id, r.data, rows.now, r as StoredRow)
    const errors = row.errors.length > 0 ? JSON.stringify(row.errors) : 'null'
    const cells = JSON.stringify(row.cells)
    rows.digest?.add(r.key, cells, errors)
    const resource = typeof (r.data as { resourceType?: unknown } | null)?.resourceType === 'string'
    return { key: r.key, recordKey: r.recordKey ?? null, data: r.json, cells, errors, resource }
  })
  const target = {
    tenantId: source.tenantId,
    panelId: source.panelId,
    dataSourceId: source.id,
    generation,
    keepsTimes: source.currentGeneration !== 0,
  }
  const keys = records.map((r) => r.key)
  const stale = rows.plan.view
    ? [
        ...staleRowStatements(
          target,
          keys,
          stored.map((r) => r.key),
        ),
        ...holdStatements(
          target,
          keys,
          [...holds.values()].filter((r) => r !== null),
          now,
        ),
      ]
    : []
  return [...stale, ...insertRowStatements(target, payload, rows.plan.version, now, 'replace')]
}

/**
 * A generation of a source dropped whole, its rows and the records its view held: a failed or
 * cancelled full sync's partial generation, or what a crashed run left of the one it wrote.
 */
export const dropGeneration = (sourceId: number, generation: number): SQL[] => [
  sql`DELETE FROM records WHERE data_source_id = ${sourceId} AND generation = ${generation}`,
  dropHeldGeneration(sourceId, generation),
]

/**
 * Deletes records by key from one generation (incremental deletes, webhook `data.deleted`): their
 * row, or every row a ViewDefinition made of them (`record_key`, expand.ts), or the record held
 * because its view gave it none (held.ts).
 */
export function deleteStatements(source: RowSource, generation: number, keys: readonly string[]): SQL[] {
  const statements: SQL[] = []
  for (let i = 0; i < keys.length; i += RECORDS_PER_STATEMENT) {
    const payload = JSON.stringify(keys.slice(i, i + RECORDS_PER_STATEMENT))
    // Two statements, not one with OR: each reads its own index (key; record_key, partial).
    statements.push(
      sql`
      DELETE FROM records WHERE data_source_id = ${source.id} AND generation = ${generation}
        AND key IN (SELECT value FROM json_each(${payload}))`,
      sql`
      DELETE FROM records WHERE data_source_id = ${source.id} AND generation = ${generation}
        AND record_key IN (SELECT value FROM json_each(${payload}))`,
      releaseStatement(source.id, generation, keys.slice(i, i + RECORDS_PER_STATEMENT)),
    )
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

function distinctKey(hash: string, seen: KeySet): string {
  if (seen.fingerprints.add(Number.parseInt(hash.slice(0, 8), 16))) return hash
  const n = (seen.repeats.get(hash) ?? 1) + 1
  seen.repeats.set(hash, n)
  return `${hash}#${n}`
}

async function webSha256(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
  let hex = ''
  for (const b of digest) hex += b.toString(16).padStart(2, '0')
  return hex
}
