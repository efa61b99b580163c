import { ConnectorError } from '../../types.ts'
import { headerNames } from './csv.ts'
import { type ByteSource, byteChunks } from './text.ts'

export const DEFAULT_XLSX_BATCH = 1000

type Row = Record<string, unknown>

export interface XlsxOptions {
  sheetName?: string
  /** 0-based position in the workbook's tab order. */
  sheetIndex?: number
  hasHeaders?: boolean
  /** Rows before the header row (by row number, so empty rows count). */
  skipRows?: number
  batchSize?: number
  signal?: AbortSignal
}

/** The part of a Node writable stream the zip reader inside exceljs is piped into. */
interface PipeTarget {
  write(chunk: Uint8Array): boolean
  end(): void
  destroy(err?: Error): void
  once(event: string, listener: () => void): void
}

interface SheetReader {
  id: number | string
  name: string
  [Symbol.asyncIterator](): AsyncIterator<{ number: number; values: unknown }>
}

/**
 * A cell value as JSON (DATA-ENGINE: Records): dates → ISO strings, rich text → its text,
 * formulas → their cached result, hyperlinks → their text, errors → the error code (`#N/A`).
 */
export function cellValue(value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  if (typeof value !== 'object') return value
  const v = value as Record<string, unknown>
  if (Array.isArray(v.richText)) return (v.richText as { text?: string }[]).map((r) => r.text ?? '').join('')
  if ('formula' in v || 'sharedFormula' in v) return cellValue(v.result)
  if ('error' in v) return String(v.error)
  if ('text' in v) return cellValue(v.text)
  return JSON.stringify(v)
}

/**
 * Streams the rows of one worksheet of an xlsx workbook in batches, with exceljs's streaming
 * WorkbookReader (loaded on demand: STYLE §12). The sheet is `sheetName`, else `sheetIndex`, else
 * the first. exceljs reads Node streams only, so the web byte stream is handed to its zip reader
 * through a minimal `pipe()` adapter (backpressure kept); worksheets stored before the shared
 * strings in the zip are spooled by exceljs to temporary files. A file that is not a readable
 * workbook, or a missing sheet, is a ConnectorError.
 */
export async function* xlsxBatches(stream: ByteSource, options: XlsxOptions = {}): AsyncGenerator<Row[]> {
  const exceljs = await loadExceljs()
  const source = byteChunks(stream)
  let target: PipeTarget | undefined
  let stopped = false
  const input = {
    pipe(dest: PipeTarget) {
      target = dest
      void (async () => {
        try {
          for await (const chunk of source) {
            if (stopped) return
            if (!dest.write(chunk)) {
              await new Promise<void>((resolve) => {
                dest.once('drain', resolve)
                dest.once('close', resolve)
              })
            }
          }
          dest.end()
        } catch (err) {
          dest.destroy(err instanceof Error ? err : new Error(String(err)))
        }
      })()
      return dest
    },
  }
  class WebStreamWorkbookReader extends exceljs.stream.xlsx.WorkbookReader {
    _getStream() {
      return input
    }
  }
  const reader = new WebStreamWorkbookReader(undefined as never, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    styles: 'cache',
    hyperlinks: 'ignore',
    entries: 'ignore',
  })
  const seen: string[] = []
  let found = false
  try {
    for await (const sheet of reader as unknown as AsyncIterable<SheetReader>) {
      options.signal?.throwIfAborted()
      seen.push(sheet.name)
      if (!isWanted(reader, sheet, options)) continue
      found = true
      yield* sheetBatches(sheet, options)
      break
    }
  } catch (err) {
    if (err instanceof ConnectorError || options.signal?.aborted) throw err
    const why = err instanceof Error ? err.message : String(err)
    throw new ConnectorError(`The file is not a readable xlsx workbook (${why})`)
  } finally {
    stopped = true
    await source.return(undefined)
    target?.destroy()
  }
  if (!found) {
    const wanted = options.sheetName !== undefined ? `named '${options.sheetName}'` : `at index ${options.sheetIndex ?? 0}`
    throw new ConnectorError(
      seen.length === 0
        ? 'The file is not a readable xlsx workbook (no worksheets found)'
        : `The workbook has no sheet ${wanted}; its sheets are ${seen.map((s) => `'${s}'`).join(', ')}`,
    )
  }
}

async function loadExceljs() {
  try {
    const mod = (await import('exceljs')) as unknown as { default?: typeof import('exceljs') } & typeof import('exceljs')
    const lib = mod.default ?? mod
    // exceljs's browser build (and the Workers bundle, which leaves it out) has no streaming reader.
    if (!lib.stream?.xlsx?.WorkbookReader) throw new Error('no streaming reader')
    return lib
  } catch {
    throw new ConnectorError('Excel files cannot be read on this runtime (the exceljs library is unavailable)')
  }
}

/** Whether this is the configured sheet: by name, else by its position in the workbook's tab order. */
function isWanted(reader: unknown, sheet: SheetReader, options: XlsxOptions): boolean {
  if (options.sheetName !== undefined) return sheet.name === options.sheetName
  const tabs = (reader as { model?: { sheets?: { id: number }[] } }).model?.sheets
  const position = tabs ? tabs.findIndex((t) => String(t.id) === String(sheet.id)) : Number(sheet.id) - 1
  return position === (options.sheetIndex ?? 0)
}

async function* sheetBatches(sheet: SheetReader, options: XlsxOptions): AsyncGenerator<Row[]> {
  const size = options.batchSize ?? DEFAULT_XLSX_BATCH
  const hasHeaders = options.hasHeaders ?? true
  const skipRows = options.skipRows ?? 0
  let header: string[] | undefined
  let batch: Row[] = []
  for await (const row of sheet) {
    if (row.number <= skipRows) continue
    const cells = (row.values as unknown[]).map(cellValue)
    if (!cells.some((c) => c !== null && c !== '')) continue
    if (hasHeaders && !header) {
      header = headerNames(Array.from({ length: cells.length - 1 }, (_, i) => String(cells[i + 1] ?? '')))
      continue
    }
    const record: Row = {}
    const width = Math.max(cells.length - 1, header?.length ?? 0)
    for (let c = 1; c <= width; c++) record[header?.[c - 1] ?? `column${c}`] = cells[c] ?? null
    batch.push(record)
    if (batch.length >= size) {
      options.signal?.throwIfAborted()
      yield batch
      batch = []
    }
  }
  if (batch.length > 0) yield batch
}
