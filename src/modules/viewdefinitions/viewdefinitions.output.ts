import { type Row, rowObject, type ViewPlan } from '../../engine/sof/index.ts'
import type { RunFormat } from './viewdefinitions.parameters.ts'

/**
 * The answer's text, format by format (SQL-ON-FHIR.md, "The operation"): a JSON array of row
 * objects, one object per line (ndjson), or CSV by RFC 4180 like the exports (CRLF, a cell with a
 * comma, quote or line break quoted; a collection or complex value as its JSON).
 */

export const RUN_CONTENT_TYPES: Record<RunFormat, string> = {
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8',
}

/** Writes rows as text: the opening (CSV header, `[`), each row, the closing. */
export interface RowWriter {
  start(): string
  row(row: Row, first: boolean): string
  end(): string
}

export function rowWriter(plan: ViewPlan, format: RunFormat, header: boolean): RowWriter {
  switch (format) {
    case 'json':
      return {
        start: () => '[',
        row: (row, first) => (first ? '' : ',') + JSON.stringify(rowObject(plan, row)),
        end: () => ']',
      }
    case 'ndjson':
      return { start: () => '', row: (row) => `${JSON.stringify(rowObject(plan, row))}\n`, end: () => '' }
    case 'csv':
      return {
        start: () => (header ? `${plan.columns.map((c) => csvField(c.name)).join(',')}\r\n` : ''),
        row: (row) => {
          let line = ''
          for (let i = 0; i < row.length; i++) line += (i === 0 ? '' : ',') + csvCell(row[i])
          return `${line}\r\n`
        },
        end: () => '',
      }
  }
}

// --- Internal helpers ---

const csvField = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text)

function csvCell(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'string') return csvField(value)
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return csvField(JSON.stringify(value))
}
