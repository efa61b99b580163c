import type { ViewConfig } from '../../db/schema.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'

/** A row as the API answers it: `{ _id, _source, _errors?, <column name>: value, … }`. */
export type Row = Record<string, unknown> & { _id: number; _source: number }

/** A record as the row queries select it. */
export interface RecordRow {
  id: number
  data_source_id: number
  cells: string | null
  errors: string | null
}

/**
 * The columns a view returns: `config.columns` (in that order) when it lists any, else every
 * column; then `columnVisibility` hides those set to false. Names no column has any more are
 * skipped (deleting a column tells the view's owner; the view keeps working).
 */
export function visibleColumns(
  all: ColumnRef[],
  view: { config: ViewConfig | null; columnVisibility: Record<string, boolean> | null },
): ColumnRef[] {
  const chosen = view.config?.columns ?? []
  const byName = new Map(all.map((c) => [c.name, c]))
  const base = chosen.length > 0 ? [...new Set(chosen)].flatMap((n) => byName.get(n) ?? []) : all
  const hidden = view.columnVisibility ?? {}
  return base.filter((c) => hidden[c.name] !== false)
}

/** One record as a row of the given columns; `_errors` only when the row has cell errors. */
export function toRow(record: RecordRow, columns: ColumnRef[]): Row {
  const cells = (record.cells ? JSON.parse(record.cells) : {}) as Record<string, unknown>
  const row: Row = { _id: Number(record.id), _source: Number(record.data_source_id) }
  const errors = record.errors ? (JSON.parse(record.errors) as unknown[]) : null
  if (errors && errors.length > 0) row._errors = errors
  for (const c of columns) row[c.name] = cells[String(c.id)] ?? null
  return row
}
