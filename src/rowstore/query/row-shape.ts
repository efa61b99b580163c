import type { ViewConfig } from '../../db/schema.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import { virtualValue, type WorkCopy } from './virtual.ts'

/** A row as the API answers it: `{ _id, _key, _source, _errors?, <column name>: value, … }`. */
export type Row = Record<string, unknown> & { _id: number; _key: string; _source: number }

/** A record as the row queries select it (`RECORD_COLUMNS`). */
export interface RecordRow {
  id: number
  row_id: number
  key: string
  data_source_id: number
  cells: string | null
  errors: string | null
  work: string | null
}

/** The columns of `RecordRow`, for a select over the alias `alias`. */
export const recordColumns = (alias: string) =>
  ['id', 'row_id', 'key', 'data_source_id', 'cells', 'errors', 'work'].map((c) => `${alias}.${c}`).join(', ')

/**
 * The columns a view returns: `config.columns` (in that order) when it lists any, else every
 * column; then `columnVisibility` hides those set to false. Names no column has any more are
 * skipped (deleting a column tells the view's owner; the view keeps working).
 */
export function visibleColumns(
  all: ColumnRef[],
  view: { config: ViewConfig | null; columnVisibility: Record<string, boolean> | null },
  virtual?: (name: string) => ColumnRef | undefined,
): ColumnRef[] {
  const chosen = view.config?.columns ?? []
  const byName = new Map(all.map((c) => [c.name, c]))
  // A virtual column (`_status`, …) is shown only where the choice names it.
  const base = chosen.length > 0 ? [...new Set(chosen)].flatMap((n) => byName.get(n) ?? virtual?.(n) ?? []) : all
  const hidden = view.columnVisibility ?? {}
  return base.filter((c) => hidden[c.name] !== false)
}

/** One record as a row of the given columns; `_errors` only when the row has cell errors. */
export function toRow(record: RecordRow, columns: ColumnRef[]): Row {
  const cells = (record.cells ? JSON.parse(record.cells) : {}) as Record<string, unknown>
  const row: Row = { _id: Number(record.row_id), _key: String(record.key), _source: Number(record.data_source_id) }
  const errors = record.errors ? (JSON.parse(record.errors) as unknown[]) : null
  if (errors && errors.length > 0) row._errors = errors
  let work: WorkCopy | null | undefined
  for (const c of columns) {
    if (c.virtual) {
      work ??= record.work ? (JSON.parse(record.work) as WorkCopy) : null
      row[c.name] = virtualValue(c, work)
    } else row[c.name] = cells[String(c.id)] ?? null
  }
  return row
}
