import type { Push } from '../../http/push-stream.ts'

export const EXPORT_FORMATS = ['csv', 'json', 'excel', 'pdf'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

/** A column of an export, in the view's order; `formula` for calculated columns. */
export interface ExportColumn {
  name: string
  type: string
  formula?: string | null
}

/** What a format writer receives: the rows in batches, keyed by column name. */
export interface ExportTable {
  /** The view's name. */
  title: string
  exportedAt: Date
  columns: ExportColumn[]
  includeFormulas: boolean
  batches: AsyncIterable<Record<string, unknown>[]>
}

/** Writes one format, pushing bytes as it goes. */
export type FormatWriter = (table: ExportTable, push: Push) => Promise<void>

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  excel: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf',
}

export const EXTENSIONS: Record<ExportFormat, string> = { csv: 'csv', json: 'json', excel: 'xlsx', pdf: 'pdf' }
