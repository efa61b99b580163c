import { headerNames } from './csv.ts'
import { FormatError } from './errors.ts'
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

/** The part of a Node duplex stream (unzipper's zip parser inside exceljs) the workbook is piped into. */
interface PipeTarget {
  write(chunk: Uint8Array): boolean
  end(): void
  destroy(err?: Error): void
  once(event: string, listener: () => void): void
  emit(event: string | symbol, ...args: unknown[]): boolean
  readonly readableEnded: boolean
}

interface SheetReader {
  id: number | string
  name: string
  /** The worksheet's XML: a Node read stream on its temporary file when exceljs spooled it. */
  iterator?: unknown
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
 * strings in the zip are spooled by exceljs to temporary files (the `tmp` package, in the OS temp
 * directory). A file that is not a readable workbook, or a missing sheet, is a FormatError; an
 * error of the byte source itself (a caller's size limit) is passed on as it is.
 *
 * Two races inside exceljs are closed here. The zip parser's premature 'end' is held back (see
 * `holdEndUntilRead`), so no part stored after a spooled worksheet is lost. And every worksheet
 * exceljs hands over is read or let go of (`release`) before the next one is asked for — exceljs
 * deletes a spooled worksheet's file at that moment, under a read stream it opened on it — and the
 * reader is run to its end after the sheet is read: exceljs deletes the other files only then.
 */
export async function* xlsxBatches(stream: ByteSource, options: XlsxOptions = {}): AsyncGenerator<Row[]> {
  const exceljs = await loadExceljs()
  const source = byteChunks(stream)
  let target: PipeTarget | undefined
  let stopped = false
  let sourceRead = false
  let sourceError: unknown
  const input = {
    pipe(dest: PipeTarget) {
      target = dest
      holdEndUntilRead(dest)
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
          sourceRead = true
          dest.end()
        } catch (err) {
          sourceError = err
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
  const sheets = (reader as unknown as AsyncIterable<SheetReader>)[Symbol.asyncIterator]()
  const seen: string[] = []
  let found = false
  let sheetRead = false
  let done = false
  try {
    for (;;) {
      const next = await sheets.next()
      if (next.done) {
        done = true
        break
      }
      const sheet = next.value
      options.signal?.throwIfAborted()
      seen.push(sheet.name)
      if (!isWanted(reader, sheet, options)) {
        release(sheet)
        continue
      }
      found = true
      try {
        yield* sheetBatches(sheet, options)
      } finally {
        release(sheet)
      }
      sheetRead = true
      break
    }
  } catch (err) {
    // The byte source's own refusal (e.g. a caller's size limit) is passed on as it is.
    if (err instanceof FormatError || err === sourceError || options.signal?.aborted) throw err
    const why = err instanceof Error ? err.message : String(err)
    throw new FormatError(`The file is not a readable xlsx workbook (${why})`)
  } finally {
    // The rest of the workbook is gone through only so that exceljs deletes its temporary files (its
    // failures no longer matter): after the sheet is read, or when the caller stopped early once the
    // whole file is in (always so when the sheet was spooled) — not to read on a file nobody wants.
    // Otherwise, and after a read error, the files exceljs spooled stay until the process exits
    // (`tmp`'s clean-up on exit): exceljs keeps their deletion to itself.
    if (!done && (sheetRead || sourceRead)) await drain(sheets).catch(() => {})
    stopped = true
    await source.return(undefined)
    target?.destroy()
  }
  if (!found) {
    const wanted = options.sheetName !== undefined ? `named '${options.sheetName}'` : `at index ${options.sheetIndex ?? 0}`
    throw new FormatError(
      seen.length === 0
        ? 'The file is not a readable xlsx workbook (no worksheets found)'
        : `The workbook has no sheet ${wanted}; its sheets are ${seen.map((s) => `'${s}'`).join(', ')}`,
    )
  }
}

/**
 * unzipper's zip parser (exceljs's) emits 'end' itself as soon as all its input is written, while
 * the entries it parsed may still wait in its readable buffer: exceljs pauses it while it spools a
 * worksheet to a temporary file, and takes that 'end' as the end of the zip, so the parts stored
 * after the worksheet (shared strings, styles, the workbook part) were lost whenever the spooling was
 * the slower of the two: text cells read as `{"sharedString":0}`, or a TypeError on the workbook
 * model (exceljs#3064). Only the 'end' the stream emits once its buffer is read (`readableEnded` is
 * set just before it) gets through; a zip cut short still fails, with unzipper's FILE_ENDED error.
 */
function holdEndUntilRead(zip: PipeTarget) {
  const emit = zip.emit
  zip.emit = function (this: PipeTarget, event: string | symbol, ...args: unknown[]) {
    if (event === 'end' && !zip.readableEnded) return false
    return emit.call(this, event, ...args)
  }
}

/**
 * Lets go of a worksheet that is not (or no longer) read. exceljs opens a read stream on a spooled
 * worksheet's temporary file before handing it over and deletes the file when the next worksheet is
 * asked for; a stream nobody reads or listens to could then fail to open it (ENOENT) and crash the
 * process with an unhandled 'error' event. Its errors are now listened to, and it is closed.
 */
function release(sheet: SheetReader) {
  const file = sheet.iterator as { on?: unknown; destroy?: unknown } | undefined
  if (typeof file?.on !== 'function' || typeof file.destroy !== 'function') return
  file.on('error', () => {})
  file.destroy()
}

/** The remaining worksheets, each let go of: exceljs deletes a spooled one's file as it moves past it. */
async function drain(sheets: AsyncIterator<SheetReader>) {
  for (;;) {
    const next = await sheets.next()
    if (next.done) return
    release(next.value)
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
    throw new FormatError('Excel files cannot be read on this runtime (the exceljs library is unavailable)')
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
