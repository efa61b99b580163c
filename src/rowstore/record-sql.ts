import { type SQL, sql } from 'drizzle-orm'
import { identityStatement, workJson } from './work-sql.ts'

/**
 * The statements that store rows already materialised (records.ts keys and materialises them;
 * materialise.ts rebuilds a ViewDefinition panel's rows with them). Below both, so neither imports
 * the other for them.
 */

/**
 * Records per INSERT statement: one JSON parameter each (D1 binds at most 100), expanded by
 * SQLite's json_each; each record's data, cells and errors in it are JSON texts as strings.
 */
export const RECORDS_PER_STATEMENT = 1000

/** Where stored rows go: one generation of one source of a panel. */
export interface RecordTarget {
  tenantId: string
  panelId: number
  dataSourceId: number
  generation: number
  /**
   * Whether a row may keep the time of the same row in the visible generation (`dataChangedAt`);
   * false when the source has no visible row yet (a first sync), which spares a look-up per row.
   */
  keepsTimes?: boolean
}

/** A row ready to store: its key, and its data, cells and errors as JSON texts (`null` for no errors). */
export interface RowPayload {
  key: string
  /** A row of a panel defined by a ViewDefinition: its record's key (expand.ts). */
  recordKey?: string | null
  data: string
  cells: string
  errors: string
  /**
   * False for a row that is no FHIR resource (its data has no `resourceType`): `_since`, the one
   * reader of a row's time, can never return it, so its time is the write's and no look-up is made.
   */
  resource?: boolean
}

/**
 * The condition every insert of a source's dependants carries: the source still exists. A sync or
 * a delivery that outlives a delete of its source (it read the source before the delete) then
 * writes nothing, whether or not the connection enforces foreign keys (docs/runtimes.md
 * "Connection state"); with them on, the same write would fail instead.
 */
export const sourceExists = (dataSourceId: number) => sql`EXISTS (SELECT 1 FROM data_sources WHERE id = ${dataSourceId})`

/**
 * `updated_at` of a row written now: when its data last changed. A row whose key the source's
 * visible generation holds with the same data keeps that row's time, so a full sync (which writes a
 * new generation) or a rewrite in place that brings nothing new changes no record's time, and
 * `$viewdefinition-run`'s `_since` finds only what changed (docs/sql-on-fhir.md). Recomputed cells
 * do not count: the time is the data's, not the cells'. The look-up costs an index probe per row,
 * so it is made only where `_since` can read the time: rows of FHIR resources of a source that has
 * a visible generation (`RecordTarget.keepsTimes`, `RowPayload.resource`).
 */
const dataChangedAt = (dataSourceId: number, now: string) => sql`coalesce((SELECT p.updated_at FROM records p
  WHERE p.data_source_id = ${dataSourceId} AND p.generation = (SELECT current_generation FROM data_sources WHERE id = ${dataSourceId})
    AND p.key = j.value ->> 0 AND p.data = j.value ->> 1), ${now})`

/**
 * INSERTs of stored rows (cells computed already) into one generation, one JSON parameter per
 * statement expanded by `json_each`, only while the source exists. A key already there is replaced
 * (`replace`: syncs, last read wins) or kept (`keep`: an import never overwrites a record created
 * meanwhile).
 */
export function insertRowStatements(
  target: RecordTarget,
  rows: RowPayload[],
  version: number,
  now: string,
  onConflict: 'replace' | 'keep',
  perStatement = RECORDS_PER_STATEMENT,
): SQL[] {
  const conflict =
    onConflict === 'keep'
      ? sql`DO NOTHING`
      : sql`DO UPDATE SET data = excluded.data, cells = excluded.cells, errors = excluded.errors,
          record_key = excluded.record_key, cells_version = excluded.cells_version, row_id = excluded.row_id,
          work = excluded.work, updated_at = excluded.updated_at`
  const statements: SQL[] = []
  for (let i = 0; i < rows.length; i += perStatement) {
    const slice = rows.slice(i, i + perStatement)
    // Rows of a ViewDefinition panel carry their record's key; others leave the column null and
    // their array one element shorter.
    const keyed = slice.some((r) => r.recordKey != null)
    const keepsTimes = target.keepsTimes !== false && slice.some((r) => r.resource !== false)
    // Each row an array of texts: SQLite reads a text element as it is (`->>`), where a JSON one
    // would be parsed and written out again, once for the row and once for the element.
    const items = slice.map((r) =>
      JSON.stringify(keyed ? [r.key, r.data, r.cells, r.errors, r.recordKey ?? null] : [r.key, r.data, r.cells, r.errors]),
    )
    // Each row with its lasting identity (made on first sight) and that identity's work (work-sql.ts).
    statements.push(
      identityStatement(target, JSON.stringify(slice.map((r) => r.key)), now, sourceExists(target.dataSourceId)),
      sql`
      INSERT INTO records (tenant_id, panel_id, data_source_id, generation, key, record_key, data, cells, errors, cells_version,
                           row_id, work, created_at, updated_at)
      SELECT ${target.tenantId}, ${target.panelId}, ${target.dataSourceId}, ${target.generation}, j.value ->> 0,
        ${keyed ? sql`j.value ->> 4` : sql`NULL`}, j.value ->> 1, j.value ->> 2, nullif(j.value ->> 3, 'null'), ${version},
        i.id, ${workJson('i')}, ${now}, ${keepsTimes ? dataChangedAt(target.dataSourceId, now) : now}
      FROM json_each(${`[${items.join(',')}]`}) j
        CROSS JOIN row_identities i ON i.data_source_id = ${target.dataSourceId} AND i.key = j.value ->> 0
      WHERE ${sourceExists(target.dataSourceId)}
      ON CONFLICT (data_source_id, generation, key) ${conflict}`,
    )
  }
  return statements
}
