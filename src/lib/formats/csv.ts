import Papa from 'papaparse'
import { FormatError } from './errors.ts'
import { type ByteSource, decodeText } from './text.ts'

export interface CsvOptions {
  hasHeaders?: boolean
  delimiter?: string
  quoteChar?: string
  escapeChar?: string
  skipRows?: number
}

export const DEFAULT_CSV_BATCH = 1000
/** Longest row (in characters) carried between chunks; past it the file is malformed (an unclosed quote). */
export const MAX_ROW_CHARS = 8 * 1024 * 1024

type Row = Record<string, unknown>

/**
 * Parses CSV text in a stream (papaparse's core parser fed chunk by chunk, the way its own
 * streamers do) and yields rows in batches (DATA-ENGINE: Files). With headers, rows are objects
 * keyed by the header row (empty names become `column<N>`, repeated names `<name>_2`, …); without,
 * by `column1..N`. `skipRows` lines before the header row are dropped. Values stay text. Empty
 * lines are skipped. An unclosed quote, a malformed quote or a row with another number of fields
 * than the header is a FormatError naming the line.
 */
export async function* csvBatches(
  stream: ByteSource,
  options: CsvOptions & { batchSize?: number; encoding?: string; signal?: AbortSignal },
): AsyncGenerator<Row[]> {
  const batchSize = options.batchSize ?? DEFAULT_CSV_BATCH
  const quoteChar = options.quoteChar ?? '"'
  const hasHeaders = options.hasHeaders ?? true
  let parser: Papa.Parser | undefined
  let newline: '\n' | '\r\n' | '\r' = '\n'
  let pending = ''
  let baseIndex = 0
  let line = 1
  let toSkip = options.skipRows ?? 0
  let header: string[] | undefined
  let batch: Row[] = []

  const lineOfRow = (rows: string[][], k: number) => {
    let n = line
    for (let j = 0; j < k; j++) n += 1 + countNewlines(rows[j], newline)
    return n
  }

  function* take(text: string, last: boolean): Generator<Row[]> {
    if (!parser) {
      if (!last && !/[\r\n]/.test(pending + text)) {
        pending += text
        return
      }
      newline = guessNewline(text, quoteChar)
      parser = new Papa.Parser({ delimiter: options.delimiter ?? ',', newline, quoteChar, escapeChar: options.escapeChar })
    }
    let input = pending + text
    while (toSkip > 0) {
      const end = input.indexOf(newline)
      if (end === -1 && !last) break
      input = end === -1 ? '' : input.slice(end + newline.length)
      toSkip--
      line++
    }
    if (toSkip > 0) {
      pending = input
      return
    }
    const result = parser.parse(input, baseIndex, !last)
    const consumed = result.meta.cursor - baseIndex
    const rows = result.data as string[][]
    // An error in the unfinished last row is judged again once that row is complete.
    const error = (result.errors as Papa.ParseError[]).find((e) => last || (e.row ?? 0) < rows.length)
    if (error) {
      const at = line + count(input.slice(0, error.index ?? 0), newline)
      throw new FormatError(
        error.code === 'MissingQuotes'
          ? `Malformed CSV: a quoted field opened on line ${at} is never closed`
          : `Malformed CSV on line ${at}: ${error.message.toLowerCase()}`,
      )
    }
    for (let k = 0; k < rows.length; k++) {
      const fields = rows[k]
      if (fields.length === 1 && fields[0] === '') continue
      if (hasHeaders && !header) {
        header = headerNames(fields)
        continue
      }
      if (header && fields.length !== header.length) {
        throw new FormatError(
          `Malformed CSV on line ${lineOfRow(rows, k)}: ${fields.length} fields where the header has ${header.length}`,
        )
      }
      batch.push(toRow(fields, header))
      if (batch.length >= batchSize) {
        yield batch
        batch = []
      }
    }
    line += count(input.slice(0, consumed), newline)
    pending = input.slice(consumed)
    baseIndex = 0
    if (pending.length > MAX_ROW_CHARS) {
      throw new FormatError(
        `Malformed CSV: the row starting on line ${line} is longer than ${MAX_ROW_CHARS} characters (an unclosed quote?)`,
      )
    }
  }

  for await (const text of decodeText(stream, options)) {
    options.signal?.throwIfAborted()
    yield* take(text, false)
  }
  yield* take('', true)
  if (batch.length > 0) yield batch
}

function toRow(fields: string[], header: string[] | undefined): Row {
  const row: Row = {}
  if (header) for (let i = 0; i < header.length; i++) row[header[i]] = fields[i]
  else for (let i = 0; i < fields.length; i++) row[`column${i + 1}`] = fields[i]
  return row
}

/** Header names made usable as keys: blanks → `column<N>`, repeats → `<name>_2`, `_3`, … */
export function headerNames(fields: string[]): string[] {
  const used = new Set<string>()
  return fields.map((raw, i) => {
    const base = raw.trim() === '' || raw === '__proto__' ? `column${i + 1}` : raw
    let name = base
    for (let n = 2; used.has(name); n++) name = `${base}_${n}`
    used.add(name)
    return name
  })
}

/** Occurrences of `newline` in `text`. */
function count(text: string, newline: string): number {
  let n = 0
  for (let i = text.indexOf(newline); i !== -1; i = text.indexOf(newline, i + newline.length)) n++
  return n
}

/** Line breaks inside the (quoted) fields of one parsed row. */
function countNewlines(fields: string[], newline: string): number {
  let n = 0
  for (const f of fields) if (f.includes(newline)) n += count(f, newline)
  return n
}

/** papaparse's own guess: the line ending seen first outside quoted fields. */
function guessNewline(text: string, quoteChar: string): '\n' | '\r\n' | '\r' {
  const escaped = quoteChar.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const sample = text.slice(0, 1024 * 1024).replace(new RegExp(`${escaped}([^]*?)${escaped}`, 'gm'), '')
  const r = sample.split('\r')
  const n = sample.split('\n')
  if (r.length === 1 || (n.length > 1 && n[0].length < r[0].length)) return '\n'
  let withN = 0
  for (const part of r) if (part[0] === '\n') withN++
  return withN >= r.length / 2 ? '\r\n' : '\r'
}
