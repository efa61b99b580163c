import { sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import type { Deps } from '../../deps.ts'
import { cellPath } from '../../rowstore/query/filter-sql.ts'
import { recomputePanel } from '../../rowstore/recompute.ts'

/**
 * Matching an import's rows to the panel's rows by their `uniqueFields` (docs/import-export.md
 * "Matching"). The key of a row is the JSON of its unique columns' cells as materialised — the
 * value in the column's type, exactly: `"1001"` and `1001` are one key in a number column, `"1"`
 * and `1` are one in a text column (both read as text), `" 1001"` is not `"1001"`, `0` is not
 * `false` in a json column. Stored rows are keyed by the same function over their stored cells, so
 * a row of any data source of the panel can match.
 */

type Db = Deps['db']
type Cells = Record<string, unknown>

export interface UniqueColumn {
  name: string
  id: number
}

/** A stored row of the panel whose unique cells equal a file row's. */
export interface PanelMatch {
  id: number
  sourceId: number
  sourceType: string
  /** The record's data, for rows of the import source only (they are the ones an import may update). */
  data: Record<string, unknown> | null
}

/** The key of a row: its unique cells in `uniqueFields` order; a missing cell is null. */
export const uniqueKey = (cells: Cells, unique: UniqueColumn[]): string =>
  JSON.stringify(unique.map((c) => cells[String(c.id)] ?? null))

/** `MRN = "1001", Site = 2`: the unique values as they are, for messages. */
export const uniqueLabel = (cells: Cells, unique: UniqueColumn[]): string =>
  unique.map((c) => `${c.name} = ${JSON.stringify(cells[String(c.id)] ?? null)}`).join(', ')

/**
 * The panel's rows (the current generation of each of its data sources) whose unique cells match
 * one of `rows`, by key. SQLite reads the panel's rows once and keeps those whose every unique
 * cell is among the values sent for that column (a superset: `->>` reads `true` as 1), the exact
 * key is then compared here. One pass over the panel, whatever the number of rows imported: never
 * a lookup per row.
 */
export async function panelRowsByKey(
  db: Db,
  tenantId: string,
  panelId: number,
  unique: UniqueColumn[],
  rows: Cells[],
): Promise<Map<string, PanelMatch[]>> {
  const found = new Map<string, PanelMatch[]>()
  if (rows.length === 0) return found
  if (!Number.isSafeInteger(panelId) || panelId <= 0) throw new Error(`invalid panel id ${panelId}`)
  const wanted = new Set(rows.map((r) => uniqueKey(r, unique)))
  const inSets = unique.map((c) => {
    const values = [...new Set(rows.map((r) => JSON.stringify(r[String(c.id)] ?? null)))].join(',')
    return sql`(r.cells ->> ${sql.raw(cellPath(c.id))}) IN (SELECT value FROM json_each(${`[${values}]`}))`
  })
  // `panel_id` is inlined, as in the row queries, so the panel's partial row index may serve the scan.
  const candidates = await db.all<{ id: number; source_id: number; type: string; cells: string | null; data: string | null }>(sql`
    SELECT r.id, r.data_source_id AS source_id, s.type, r.cells, CASE WHEN s.type = 'import' THEN r.data END AS data
    FROM records r JOIN data_sources s ON s.id = r.data_source_id AND s.tenant_id = ${tenantId}
    WHERE r.tenant_id = ${tenantId} AND r.panel_id = ${sql.raw(String(panelId))} AND r.generation = s.current_generation
      AND ${sql.join(inSets, sql` AND `)}
    ORDER BY r.id`)
  for (const c of candidates) {
    const key = uniqueKey(JSON.parse(c.cells ?? '{}'), unique)
    if (!wanted.has(key)) continue
    const match = {
      id: Number(c.id),
      sourceId: Number(c.source_id),
      sourceType: c.type,
      data: c.data === null ? null : (JSON.parse(c.data) as Record<string, unknown>),
    }
    const list = found.get(key)
    if (list) list.push(match)
    else found.set(key, [match])
  }
  return found
}

/**
 * Matching reads stored cells, so they must be those of the current columns: a panel left stale
 * by a column change (large panels are recomputed in the background, an import's createColumns
 * included) is recomputed first.
 */
export async function ensureCurrentCells(ctx: ServiceContext, panelId: number): Promise<void> {
  const [panel] = await ctx.db.all<{ columns_version: number; materialised_version: number }>(sql`
    SELECT columns_version, materialised_version FROM panels WHERE id = ${panelId} AND tenant_id = ${ctx.scope.tenantId}`)
  if (!panel || Number(panel.columns_version) === Number(panel.materialised_version)) return
  await recomputePanel(ctx.db, ctx.scope.tenantId, panelId, () => ctx.clock.now())
}
