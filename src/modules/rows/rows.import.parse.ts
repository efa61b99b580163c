import { invalid, tooLarge } from '../../errors.ts'
import { csvBatches } from '../../lib/formats/csv.ts'
import { FormatError } from '../../lib/formats/errors.ts'
import { jsonBatches } from '../../lib/formats/json.ts'
import { xlsxBatches } from '../../lib/formats/xlsx.ts'
import type { ImportInput } from './rows.import.request.ts'
import type { ImportConfig, ImportFormat } from './rows.import.schemas.ts'

type Row = Record<string, unknown>

/** File extensions that name a format; a file named for another format than the config's is refused. */
const FORMAT_OF_EXTENSION: Record<string, ImportFormat | 'xls'> = {
  csv: 'csv',
  txt: 'csv',
  xlsx: 'excel',
  xls: 'xls',
  json: 'json',
  ndjson: 'json',
}

/**
 * The rows of an import, read whole before anything is written (so a file that fails as a whole
 * changes nothing): the file parsed by its format with the shared parsers (csv, xlsx, json), or the
 * rows of a JSON body. `options.skipRows` drops lines before the csv header, sheet rows before the
 * excel header, and the first objects of json. Unreadable files are 400s naming the problem; more
 * rows than IMPORT_MAX_ROWS is a 413.
 */
export async function readImportRows(input: ImportInput, maxRows: number): Promise<Row[]> {
  const { config } = input
  checkFormat(config, input.file?.name)
  const cap = (n: number) => {
    if (n > maxRows) throw tooLarge(`Imports are limited to ${maxRows} rows (IMPORT_MAX_ROWS)`)
  }
  if (input.rows) {
    const rows = input.rows.slice(config.options.skipRows ?? 0)
    cap(rows.length)
    return rows
  }
  const rows: Row[] = []
  const file = input.file!
  try {
    for await (const batch of batchesOf(config, file.body)) {
      for (const row of batch) rows.push(row)
      cap(rows.length)
    }
  } catch (err) {
    if (err instanceof FormatError) {
      throw invalid([{ path: 'file', message: err.message }], `The file cannot be read as ${config.format}: ${err.message}`)
    }
    throw err
  }
  return config.format === 'json' ? rows.slice(config.options.skipRows ?? 0) : rows
}

/** `allowedFormats` admits the config's format, and a file's extension does not name another one. */
function checkFormat(config: ImportConfig, name: string | undefined) {
  const allowed = config.validation.allowedFormats
  if (allowed && !allowed.includes(config.format)) {
    throw invalid(
      [{ path: 'config.format', message: `'${config.format}' is not one of validation.allowedFormats (${allowed.join(', ')})` }],
      `Format '${config.format}' is not allowed by this import's validation.allowedFormats`,
    )
  }
  const ext = name?.includes('.') ? name.split('.').pop()!.toLowerCase() : undefined
  const named = ext ? FORMAT_OF_EXTENSION[ext] : undefined
  if (named === 'xls') {
    throw invalid([{ path: 'file', message: 'legacy .xls workbooks are not supported; save the file as .xlsx' }])
  }
  if (named && named !== config.format) {
    throw invalid(
      [{ path: 'file', message: `'${name}' is a ${named} file but config.format is '${config.format}'` }],
      `The file '${name}' does not match the import format '${config.format}'`,
    )
  }
}

function batchesOf(config: ImportConfig, body: ReadableStream<Uint8Array>): AsyncIterable<Row[]> {
  const { hasHeaders, skipRows } = config.options
  switch (config.format) {
    case 'csv':
      return csvBatches(body, { hasHeaders, skipRows })
    case 'excel':
      return xlsxBatches(body, { hasHeaders, skipRows })
    case 'json':
      return jsonBatches(body)
  }
}
