import { and, asc, eq, sql } from 'drizzle-orm'
import { columns } from '../../db/schema.ts'
import type { Deps } from '../../deps.ts'
import { cellPath } from './filter-sql.ts'
import { WORK_INDEX_EXPRESSIONS } from './virtual.ts'

/**
 * The row index of a panel (docs/views-and-rows.md "Speed"): one partial index per panel,
 *
 *   records_p<panel>_cells_<hash> ON records (data_source_id, generation,
 *     (cells ->> '$."<id>"') for each column, (work ->> '$.<field>') for each work field, row_id)
 *   WHERE panel_id = <panel>
 *
 * Row queries (views.query.ts) name the same expressions and the same literal `panel_id`, so SQLite
 * filters, sorts, counts and groups from the index, reading each cell value from it instead of
 * parsing the JSON (`->>`, unlike json_extract, may be replaced by an indexed value), and break
 * ties by the row id it holds last; the table is
 * read only for the rows of a page and for cells that may hold arrays. The hash names the set of
 * column ids: a new column set gets a new index and the old one is dropped. Plain SQLite DDL, so
 * libSQL and D1 alike.
 */

/** Columns beyond this many (by id) are left out of the index; they are read from the JSON. */
export const MAX_INDEXED_COLUMNS = 60

/** Index names known to exist, per database handle (skips the schema lookup on hot reads). */
const known = new WeakMap<object, Set<string>>()

function ensuredIn(db: object): Set<string> {
  const set = known.get(db) ?? new Set<string>()
  known.set(db, set)
  return set
}

const NAME = /^records_p\d+_(rows|cells)_[0-9a-z]+$/

/** The index name for a panel and its column ids. */
export function rowIndexName(panelId: number, columnIds: number[]): string {
  return `records_p${panelId}_cells_${fnv1a(`${indexedIds(columnIds).join(',')}|work|row_id`).toString(36)}`
}

/**
 * Makes sure the panel's row index for these columns exists and drops its stale ones. Cheap once
 * done (an in-process set); building it over a large panel takes about a second per 100k rows.
 */
export async function ensureRowIndex(db: Deps['db'], panelId: number, columnIds: number[]): Promise<void> {
  const name = rowIndexName(panelId, columnIds)
  const ensured = ensuredIn(db)
  if (ensured.has(name)) return
  const prefix = `records\\_p${panelId}\\_%`
  const existing = await db.all<{ name: string }>(
    sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND name LIKE ${prefix} ESCAPE '\\'`,
  )
  if (!existing.some((e) => e.name === name)) {
    const cells = indexedIds(columnIds).map((id) => `(cells ->> ${cellPath(id)})`)
    await db.run(
      sql.raw(
        `CREATE INDEX IF NOT EXISTS ${name} ON records (${['data_source_id', 'generation', ...cells, ...WORK_INDEX_EXPRESSIONS, 'row_id'].join(', ')}) WHERE panel_id = ${panelId}`,
      ),
    )
  }
  for (const old of existing) {
    if (old.name !== name && NAME.test(old.name)) {
      ensured.delete(old.name)
      // A stale index only costs writes; one that cannot be dropped now (busy) goes next time.
      await db.run(sql.raw(`DROP INDEX IF EXISTS ${old.name}`)).catch(() => undefined)
    }
  }
  ensured.add(name)
}

/** After a column is created or deleted: the panel's index for its current columns (columns service). */
export async function refreshRowIndex(db: Deps['db'], tenantId: string, panelId: number): Promise<void> {
  const rows = await db
    .select({ id: columns.id })
    .from(columns)
    .where(and(eq(columns.tenantId, tenantId), eq(columns.panelId, panelId)))
    .orderBy(asc(columns.id))
  await ensureRowIndex(
    db,
    panelId,
    rows.map((r) => r.id),
  )
}

// --- Internal helpers ---

const indexedIds = (ids: number[]) => [...new Set(ids)].sort((a, b) => a - b).slice(0, MAX_INDEXED_COLUMNS)

function fnv1a(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}
