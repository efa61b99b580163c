import { type SQL, sql } from 'drizzle-orm'
import { positionedRowsOf, prepareView, type ViewPlan, ViewRunError } from '../engine/sof/index.ts'

/**
 * How records become stored rows (docs/sql-on-fhir.md, "Panels defined by a ViewDefinition"). A
 * record is one row, except in a panel defined by a ViewDefinition: there a resource of the view's
 * type, from the view's source (or any source), is stored as one row per row of the view, keyed
 * `<record key>#<position>` (the position of its unnested elements, `name[1].given[0]`; the record
 * key alone for a row of the resource itself), each holding the whole resource in `data` and the
 * record's key in `record_key`. That is what lets a replaced view be re-expanded, and the view be
 * removed, without reading the source again. Syncs, webhooks, imports and recomputes all store
 * rows through `storedRowsOf`.
 */

/** A panel's ViewDefinition, compiled, with the base column (by id) each of its columns fills. */
export interface PanelView {
  plan: ViewPlan
  /** The one source whose records it expands; null: every source. */
  dataSourceId: number | null
  /** `String(column id)` of each view column, in the view's column order. */
  columnKeys: (string | undefined)[]
}

/** A record as a sync or a recompute has it: its key, data and data as JSON. */
export interface SourceRow {
  key: string
  data: Record<string, unknown>
  json: string
}

/** A row ready to materialise: its key, its record's key (view rows), the data, and the view's cells by column id. */
export interface StoredRow extends SourceRow {
  recordKey: string | null
  /** The view's values for its columns (by column id); absent for a row of one record. */
  given?: Record<string, unknown>
  /** A view that could not turn this resource into rows (ViewRunError): the row is the record's, with this error. */
  viewError?: { column: string; code: string; message: string }
}

/** Compiles a panel's stored view against its base columns (by name). */
export async function panelView(
  definition: Record<string, unknown>,
  dataSourceId: number | null,
  baseColumns: { id: number; name: string }[],
): Promise<PanelView> {
  const plan = await prepareView(definition)
  const ids = new Map(baseColumns.map((c) => [c.name, String(c.id)]))
  return { plan, dataSourceId, columnKeys: plan.columns.map((c) => ids.get(c.name)) }
}

/** Whether the view expands this record of this source. */
export const expands = (view: PanelView | undefined, dataSourceId: number, data: unknown): view is PanelView =>
  view !== undefined &&
  (view.dataSourceId === null || view.dataSourceId === dataSourceId) &&
  (data as { resourceType?: unknown } | null)?.resourceType === view.plan.resource

/**
 * The rows a record is stored as: itself, or one per row of the view (none when the view gives
 * none: a `where` that excludes it, a `forEach` over nothing). A resource the view cannot turn
 * into rows (a non-collection column with several values) stays one row, carrying the error.
 */
export function storedRowsOf(view: PanelView | undefined, dataSourceId: number, record: SourceRow): StoredRow[] {
  if (!expands(view, dataSourceId, record.data)) return [{ ...record, recordKey: null }]
  let rows: ReturnType<typeof positionedRowsOf>
  try {
    rows = positionedRowsOf(view.plan, record.data)
  } catch (err) {
    if (!(err instanceof ViewRunError)) throw err
    return [{ ...record, recordKey: null, viewError: { column: err.path, code: 'VIEW', message: err.message } }]
  }
  return rows.map(({ row, position }) => {
    const given: Record<string, unknown> = {}
    view.columnKeys.forEach((key, i) => {
      if (key !== undefined) given[key] = row[i]
    })
    return { ...record, key: position === '' ? record.key : `${record.key}#${position}`, recordKey: record.key, given }
  })
}

/** Where rows go: one generation of one source. */
export interface RowsTarget {
  dataSourceId: number
  generation: number
}

/**
 * DELETEs of the rows these records no longer have: rows stored for them before (by `record_key`,
 * or their one row by key) whose key is not among `keep`. Run before the records' rows are
 * upserted, in the same batch: an incremental sync or a webhook that drops a name drops its rows.
 */
export function staleRowStatements(target: RowsTarget, recordKeys: string[], keep: string[]): SQL[] {
  if (recordKeys.length === 0) return []
  const records = JSON.stringify(recordKeys)
  const kept = JSON.stringify(keep)
  // Two statements, not one with OR: each reads its own index (record_key, partial; key).
  return [
    sql`DELETE FROM records WHERE data_source_id = ${target.dataSourceId} AND generation = ${target.generation}
      AND record_key IN (SELECT value FROM json_each(${records})) AND key NOT IN (SELECT value FROM json_each(${kept}))`,
    sql`DELETE FROM records WHERE data_source_id = ${target.dataSourceId} AND generation = ${target.generation}
      AND key IN (SELECT value FROM json_each(${records})) AND key NOT IN (SELECT value FROM json_each(${kept}))`,
  ]
}

/** A stored row as a recompute reads it. */
export interface ReadRow {
  id: number
  data_source_id: number
  generation: number
  key: string
  record_key: string | null
  data: string
  cells: string | null
  errors: string | null
}

/** A stored row's materialised cells and errors as JSON texts (errors `null` when none). */
export type Materialised = (row: StoredRow, dataSourceId: number) => { cells: string; errors: string | null }

/**
 * What a rebuild changes: rows to delete (ids), to update in place, and to insert (per generation);
 * and the records whose rows all went, to hold (held.ts), per generation.
 */
export interface Rebuild {
  deleteIds: number[]
  updates: [id: number, cells: string, errors: string | null, recordKey: string | null][]
  inserts: { target: RowsTarget; rows: (StoredRow & { cells: string; errors: string | null })[] }[]
  held: { target: RowsTarget; records: { key: string; json: string }[] }[]
}

/**
 * A recompute of rows whose shape may change (a panel defined by a view, or rows a view left):
 * every record of `batch` is stored again as `storedRowsOf` says, against all its stored rows
 * (`existing`, read by the caller for these records). Rows it still has keep their id and are
 * rewritten only when their cells change; rows it no longer has go; new ones are inserted. A
 * record left with no row is held (`held`), so a later view can store it again.
 */
export function rebuildRecords(
  view: PanelView | undefined,
  batch: ReadRow[],
  existing: ReadRow[],
  materialised: Materialised,
): Rebuild {
  const out: Rebuild = { deleteIds: [], updates: [], inserts: [], held: [] }
  const recordOf = (r: ReadRow) => `${r.data_source_id}\u0000${r.generation}\u0000${r.record_key ?? r.key}`
  const stored = new Map<string, ReadRow[]>()
  for (const r of existing) {
    const list = stored.get(recordOf(r))
    if (list) list.push(r)
    else stored.set(recordOf(r), [r])
  }
  const done = new Set<string>()
  const inserts = new Map<string, Rebuild['inserts'][number]>()
  const held = new Map<string, Rebuild['held'][number]>()
  for (const r of batch) {
    const id = recordOf(r)
    if (done.has(id)) continue
    done.add(id)
    const record = { key: r.record_key ?? r.key, data: JSON.parse(r.data) as Record<string, unknown>, json: r.data }
    const have = new Map((stored.get(id) ?? [r]).map((s) => [s.key, s]))
    const rows = storedRowsOf(view, r.data_source_id, record)
    if (rows.length === 0) {
      const at = `${r.data_source_id}:${r.generation}`
      let group = held.get(at)
      if (!group) {
        group = { target: { dataSourceId: r.data_source_id, generation: r.generation }, records: [] }
        held.set(at, group)
        out.held.push(group)
      }
      group.records.push({ key: record.key, json: record.json })
    }
    for (const row of rows) {
      const { cells, errors } = materialised(row, r.data_source_id)
      const old = have.get(row.key)
      have.delete(row.key)
      if (!old) {
        const at = `${r.data_source_id}:${r.generation}`
        let group = inserts.get(at)
        if (!group) {
          group = { target: { dataSourceId: r.data_source_id, generation: r.generation }, rows: [] }
          inserts.set(at, group)
          out.inserts.push(group)
        }
        group.rows.push({ ...row, cells, errors })
      } else if (old.cells !== cells || old.errors !== errors || old.record_key !== row.recordKey) {
        out.updates.push([old.id, cells, errors, row.recordKey])
      }
    }
    for (const gone of have.values()) out.deleteIds.push(gone.id)
  }
  return out
}

/**
 * The stored rows of the records of `batch` that may have several (view rows, or records a view
 * expands), read in one statement per generation; every row of them, also outside the batch.
 */
export function recordRowsQuery(tenantId: string, panelId: number, target: RowsTarget, recordKeys: string[]): SQL {
  const keys = JSON.stringify(recordKeys)
  const rowsWhere = (match: SQL) => sql`SELECT id, data_source_id, generation, key, record_key, data, cells, errors FROM records
    WHERE data_source_id = ${target.dataSourceId} AND generation = ${target.generation}
      AND +tenant_id = ${tenantId} AND +panel_id = ${panelId} AND ${match}`
  // A UNION, not an OR: each half reads its own index (record_key, partial; key).
  return sql`${rowsWhere(sql`record_key IN (SELECT value FROM json_each(${keys}))`)}
    UNION ${rowsWhere(sql`key IN (SELECT value FROM json_each(${keys}))`)}`
}
