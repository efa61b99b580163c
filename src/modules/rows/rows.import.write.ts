import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import type { Deps } from '../../deps.ts'
import { isoNow } from '../../lib/clock.ts'
import { insertRowStatements } from '../../rowstore/record-sql.ts'
import { contentHashes } from '../../rowstore/records.ts'

/**
 * The writes of an import (DATA-ENGINE: import): the panel's one `import` data source, keys for new
 * import records, and statements for one `db.batch`, so an import commits whole.
 */

type Db = Deps['db']

export interface ImportSource {
  id: number
  generation: number
}

/** A row ready to store: key, data, cells, cell errors (null when none). */
export interface StoredRow {
  key: string
  data: Record<string, unknown>
  cells: Record<string, unknown>
  errors: unknown[] | null
}

/** Keys per lookup statement. Lookups are `json_each CROSS JOIN records`: SQLite then walks the keys and
 * probes the (source, generation, key) index for each, never the other way round. */
const KEYS_PER_LOOKUP = 1000

/**
 * The panel's import data source, created on the first import together with its CREATE change
 * (the change is inserted only when the source was). Concurrent first imports create one source:
 * the insert is conditional on none existing, in one statement.
 */
export async function ensureImportSource(ctx: ServiceContext, panelId: number, ownerId: string): Promise<ImportSource> {
  const { tenantId, userId } = ctx.scope
  const now = isoNow(ctx.clock)
  const { userAgent, ipAddress, source } = ctx.meta
  const metadata = JSON.stringify({ source, ...(userAgent ? { userAgent } : {}), ...(ipAddress ? { ipAddress } : {}) })
  const created = JSON.stringify({ type: { newValue: 'import' }, config: { newValue: {} } })
  await ctx.db.batch([
    ctx.db.run(sql`
      INSERT INTO data_sources (tenant_id, user_id, panel_id, type, config, sync_status, current_generation, created_at, updated_at)
      SELECT ${tenantId}, ${ownerId}, ${panelId}, 'import', '{}', 'pending', 0, ${now}, ${now}
      WHERE NOT EXISTS (SELECT 1 FROM data_sources WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} AND type = 'import')`),
    ctx.db.run(sql`
      INSERT INTO changes (tenant_id, user_id, panel_id, entity_type, entity_id, action, changes, metadata, created_at)
      SELECT ${tenantId}, ${userId}, ${panelId}, 'DataSource', last_insert_rowid(), 'CREATE', ${created}, ${metadata}, ${now}
      WHERE changes() = 1`),
  ])
  const found = await findImportSource(ctx.db, tenantId, panelId)
  if (!found) throw new Error(`import source of panel ${panelId} was not created`)
  return found
}

/** The panel's import data source, if it has one (the oldest, should two ever exist). */
export async function findImportSource(db: Db, tenantId: string, panelId: number): Promise<ImportSource | undefined> {
  const [row] = await db.all<{ id: number; generation: number }>(sql`
    SELECT id, current_generation AS generation FROM data_sources
    WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} AND type = 'import' ORDER BY id LIMIT 1`)
  return row ? { id: Number(row.id), generation: Number(row.generation) } : undefined
}

/**
 * Keys for rows without uniqueFields: the SHA-256 of the content, made free by freeKeys, so every
 * row is a new record.
 */
export async function contentKeys(
  deps: Pick<Deps, 'db' | 'sha256Hex'>,
  source: ImportSource,
  rows: { data: Record<string, unknown> }[],
): Promise<string[]> {
  const hashes = await contentHashes(
    rows.map((r) => JSON.stringify(r.data)),
    deps.sha256Hex,
  )
  return freeKeys(deps.db, source, hashes)
}

/**
 * Record keys for new import records: each base key as it is, or with `#2`, `#3`, … when a stored
 * record or an earlier key of the list holds it. (Rows with uniqueFields are matched by their
 * cells, not their key, so a key taken by an older record — a value imported under another column
 * type, say — must not make the insert a silent no-op.)
 */
export async function freeKeys(db: Db, source: ImportSource, bases: string[]): Promise<string[]> {
  const distinct = [...new Set(bases)]
  const taken = new Set<string>()
  for (let i = 0; i < distinct.length; i += KEYS_PER_LOOKUP) {
    const rows = await db.all<{ key: string }>(sql`
      SELECT r.key FROM json_each(${JSON.stringify(distinct.slice(i, i + KEYS_PER_LOOKUP))}) j
      CROSS JOIN records r ON r.data_source_id = ${source.id} AND r.generation = ${source.generation}
        AND r.key >= j.value AND r.key < j.value || '$'`)
    for (const r of rows) taken.add(r.key)
  }
  return bases.map((base) => {
    let key = base
    for (let n = 2; taken.has(key); n++) key = `${base}#${n}`
    taken.add(key)
    return key
  })
}

/** Inserts of new records with their cells (a record created meanwhile under the same key is kept). */
export function insertStatements(
  scope: { tenantId: string; panelId: number },
  source: ImportSource,
  rows: StoredRow[],
  version: number,
  now: string,
  perStatement: number,
): SQL[] {
  const target = { ...scope, dataSourceId: source.id, generation: source.generation }
  const payload = rows.map((r) => ({
    key: r.key,
    data: JSON.stringify(r.data),
    cells: JSON.stringify(r.cells),
    errors: JSON.stringify(r.errors ?? null),
  }))
  return insertRowStatements(target, payload, version, now, 'keep', perStatement)
}

/**
 * Updates of existing records (by id) with their merged data and new cells. `+records.tenant_id`
 * keeps SQLite from driving the update by the tenant index (a scan per payload row).
 */
export function updateStatements(
  tenantId: string,
  rows: (StoredRow & { id: number })[],
  version: number,
  now: string,
  perStatement: number,
): SQL[] {
  const out: SQL[] = []
  for (let i = 0; i < rows.length; i += perStatement) {
    const payload = JSON.stringify(rows.slice(i, i + perStatement).map((r) => [r.id, r.data, r.cells, r.errors]))
    out.push(sql`
      UPDATE records SET data = j.value -> 1, cells = j.value -> 2, errors = nullif(j.value -> 3, 'null'),
        cells_version = ${version}, updated_at = ${now}
      FROM json_each(${payload}) j
      WHERE records.id = j.value ->> 0 AND +records.tenant_id = ${tenantId}`)
  }
  return out
}
