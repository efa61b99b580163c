import type { Push } from '../../http/push-stream.ts'
import type { ExportTable } from './rows.export.types.ts'

/**
 * The text exports (docs/import-export.md): CSV by RFC 4180 (CRLF line ends, fields with a comma,
 * quote or line break quoted, quotes doubled) with formula-injection protection, and JSON as one
 * streamed array.
 */

const encoder = new TextEncoder()

/** A cell as text: blank → "", lists joined by "; ", objects as JSON. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (Array.isArray(value))
    return value.map((v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v ?? ''))).join('; ')
  if (typeof value === 'object') return JSON.stringify(value)
  return String(value)
}

/**
 * A text that a spreadsheet would run as a formula (it starts with =, +, -, @, a tab or a carriage
 * return) gets a leading apostrophe (OWASP "CSV injection"). Numbers and booleans are written as
 * they are, so `-5` stays `-5`; texts, lists and objects are protected.
 */
export function protect(value: unknown, text: string): string {
  if (typeof value === 'number' || typeof value === 'boolean') return text
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text
}

const field = (text: string) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text)

const line = (cells: string[]) => `${cells.map(field).join(',')}\r\n`

/**
 * A cell as a CSV field. CSV has no null: a blank cell (null) is an empty field, a present but empty
 * value ("" or []) a quoted empty field `""` — the convention PostgreSQL's COPY reads back as NULL
 * and '' (docs/import-export.md). A one-element list cannot be told from its element.
 */
const csvField = (value: unknown): string =>
  value === '' || (Array.isArray(value) && value.length === 0) ? '""' : field(protect(value, cellText(value)))

/** CSV: the column names, with `includeFormulas` a second header row holding each calculated column's formula. */
export async function writeCsv(table: ExportTable, push: Push): Promise<void> {
  const names = table.columns.map((c) => c.name)
  let head = line(names.map((n) => protect(n, n)))
  if (table.includeFormulas) head += line(table.columns.map((c) => (c.formula ? protect(c.formula, c.formula) : '')))
  await push(encoder.encode(head))
  for await (const batch of table.batches) {
    let out = ''
    for (const row of batch) out += `${names.map((n) => csvField(row[n])).join(',')}\r\n`
    await push(encoder.encode(out))
  }
}

/**
 * JSON: an array of `{ <column name>: value }`; with `includeFormulas` an object
 * `{ view, exportedAt, columns, formulas: { <name>: formula }, rows: [...] }`.
 */
export async function writeJson(table: ExportTable, push: Push): Promise<void> {
  const names = table.columns.map((c) => c.name)
  if (table.includeFormulas) {
    const formulas = Object.fromEntries(table.columns.filter((c) => c.formula).map((c) => [c.name, c.formula]))
    const head = { view: table.title, exportedAt: table.exportedAt.toISOString(), columns: names, formulas }
    await push(encoder.encode(`${JSON.stringify(head).slice(0, -1)},"rows":[`))
  } else await push(encoder.encode('['))
  let first = true
  for await (const batch of table.batches) {
    const parts: string[] = []
    for (const row of batch) {
      const out: Record<string, unknown> = {}
      for (const n of names) out[n] = row[n] ?? null
      parts.push(JSON.stringify(out))
    }
    if (parts.length === 0) continue
    await push(encoder.encode(`${first ? '\n' : ',\n'}${parts.join(',\n')}`))
    first = false
  }
  await push(encoder.encode(table.includeFormulas ? '\n]}\n' : '\n]\n'))
}
