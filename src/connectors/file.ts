import { z } from 'zod'
import { FileAccessError, filePathProblem, noFileStoreMessage } from '../lib/files.ts'
import { csvBatches } from '../lib/formats/csv.ts'
import { jsonBatches } from '../lib/formats/json.ts'
import { isValidPath } from '../lib/formats/json-path.ts'
import { type ByteSource, isSupportedEncoding } from '../lib/formats/text.ts'
import { xlsxBatches } from '../lib/formats/xlsx.ts'
import { xmlBatches } from '../lib/formats/xml.ts'
import { byteLimit } from '../lib/streams.ts'
import {
  asConnectorError,
  type Connector,
  type ConnectorContext,
  ConnectorError,
  defineConnector,
  type SourceRecord,
} from './types.ts'

export const CONNECTOR_TYPE = 'file'
export const BATCH_SIZE = 1000

/** The source types that read a file, and the formats each accepts (the first is its default). */
export const FILE_SOURCE_FORMATS = {
  file: ['csv', 'tsv', 'json', 'ndjson', 'xml', 'excel', 'xlsx'],
  csv: ['csv', 'tsv'],
  json: ['json', 'ndjson'],
  excel: ['excel', 'xlsx'],
} as const
export type FileSourceType = keyof typeof FILE_SOURCE_FORMATS
export const FILE_SOURCE_TYPES = Object.keys(FILE_SOURCE_FORMATS) as FileSourceType[]
export const isFileSourceType = (type: string): type is FileSourceType => Object.hasOwn(FILE_SOURCE_FORMATS, type)

/** How a format is read: `ndjson` is json (NDJSON is detected), `xlsx` is excel. */
const CANONICAL = { csv: 'csv', tsv: 'tsv', json: 'json', ndjson: 'json', xml: 'xml', excel: 'excel', xlsx: 'excel' } as const
export type FileFormat = (typeof CANONICAL)[keyof typeof CANONICAL]

/** A path's extension, lower case without the dot ('' when it has none). */
export function extensionOf(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1)
  const dot = name.lastIndexOf('.')
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase()
}

const normaliseExtension = (e: string) => e.trim().replace(/^\./, '').toLowerCase()

/** The problem with a file name under `allowedExtensions`, or undefined when it is allowed. */
export function extensionProblem(path: string, allowed: string[] | undefined): string | undefined {
  if (!allowed) return undefined
  const ext = extensionOf(path)
  if (allowed.map(normaliseExtension).includes(ext)) return undefined
  return `${ext ? `extension '.${ext}'` : 'a name without extension'} is not in allowedExtensions (${allowed.join(', ')})`
}

const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v)
const noLineBreak = (v: string) => !/[\r\n]/.test(v)

const baseShape = {
  filePath: z.string().superRefine((path, ctx) => {
    const problem = filePathProblem(path)
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  }),
  hasHeaders: z.boolean().default(true),
  delimiter: z.string().min(1).max(10).refine(noLineBreak, 'must not contain a line break').optional(),
  quoteChar: z.string().length(1).refine(noLineBreak, 'must not be a line break').optional(),
  escapeChar: z.string().length(1).refine(noLineBreak, 'must not be a line break').optional(),
  encoding: z
    .string()
    .refine(isSupportedEncoding, 'is not a text encoding this service knows (e.g. utf-8, latin1, utf-16le)')
    .optional(),
  sheetName: z.string().min(1).optional(),
  sheetIndex: z.number().int().min(0).optional(),
  jsonPath: z.string().refine(isValidPath, 'must be a path like $.data.items, items[0].rows or items[*].resource').optional(),
  skipRows: z.number().int().min(0).default(0),
  maxRows: z.number().int().min(1).optional(),
  allowedExtensions: z.array(z.string().min(1)).min(1).optional(),
  maxFileSize: z.number().int().min(1).optional(),
  keyField: z.string().min(1).optional(),
}

/**
 * Config of a file source (spec §2.3 File). For `file` the format is required; the `csv`, `json`
 * and `excel` types default it and refuse a format of another kind. Unknown fields pass through
 * (schedule, timezone). The output carries the format as it is read (`ndjson` → json, `xlsx` → excel).
 */
export function fileConfigSchema(type: FileSourceType) {
  const formats = FILE_SOURCE_FORMATS[type]
  return z
    .object({ ...baseShape, format: z.string().optional() })
    .passthrough()
    .superRefine(
      (c, ctx) => {
        if (c.format === undefined && type === 'file') {
          ctx.addIssue({ code: 'custom', path: ['format'], message: `required: one of ${formats.join(', ')}` })
        }
      },
      { when: ({ value }) => isObject(value) }, // named even beside other bad fields
    )
    .superRefine((c, ctx) => {
      if (c.format !== undefined && !(formats as readonly string[]).includes(c.format)) {
        ctx.addIssue({
          code: 'custom',
          path: ['format'],
          message:
            type === 'file'
              ? `must be one of ${formats.join(', ')}`
              : `a ${type} source reads ${formats.join(' or ')} files, not '${c.format}'`,
        })
      }
      const problem = filePathProblem(c.filePath) ? undefined : extensionProblem(c.filePath, c.allowedExtensions)
      if (problem) ctx.addIssue({ code: 'custom', path: ['filePath'], message: problem })
      if (c.quoteChar !== undefined && c.delimiter?.includes(c.quoteChar)) {
        ctx.addIssue({ code: 'custom', path: ['delimiter'], message: 'must not contain the quoteChar' })
      }
    })
    .transform((c) => ({ ...c, format: CANONICAL[(c.format ?? formats[0]) as keyof typeof CANONICAL] as FileFormat }))
}

export type FileConfig = z.output<ReturnType<typeof fileConfigSchema>>

/**
 * Reads a file under the files root (DATA-ENGINE: Files) as records in batches of 1000, streamed:
 * only the batch at hand is in memory (XML and xlsx have their own bounds, see their parsers).
 * `maxFileSize` and the service's byte limit end the sync with an error before reading (and while
 * reading, should the file grow); `maxRows` stops early and is reported through `ctx.truncated`.
 * The parsers' format errors end the sync as ConnectorErrors with their message.
 */
async function* readFileSource(config: FileConfig, ctx: ConnectorContext): AsyncGenerator<SourceRecord[]> {
  try {
    yield* readFile(config, ctx)
  } catch (err) {
    throw asConnectorError(err)
  }
}

async function* readFile(config: FileConfig, ctx: ConnectorContext): AsyncGenerator<SourceRecord[]> {
  const files = ctx.files
  if (!files) throw new ConnectorError(noFileStoreMessage(ctx.runtime, 'A file data source'))
  const path = config.filePath
  const problem = extensionProblem(path, config.allowedExtensions)
  if (problem) throw new ConnectorError(`File '${path}': ${problem}`)
  const size = await fileAccess(() => files.stat(path)).then((s) => s.size)
  if (config.maxFileSize !== undefined && size > config.maxFileSize) {
    throw new ConnectorError(`File '${path}' is ${size} bytes, more than its maxFileSize of ${config.maxFileSize} bytes`)
  }
  const serviceLimit = ctx.limits.maxBytes
  if (size > serviceLimit) {
    throw new ConnectorError(`File '${path}' is ${size} bytes, more than the service's limit of ${serviceLimit} bytes per sync`)
  }
  const limit = Math.min(config.maxFileSize ?? Number.POSITIVE_INFINITY, serviceLimit)
  const stream = await fileAccess(() => files.read(path, { signal: ctx.signal }))
  const bytes = stream.pipeThrough(
    byteLimit(limit, () => new ConnectorError(`File '${path}' grew past ${limit} bytes while it was read`)).transform,
  )
  let count = 0
  for await (const batch of parse(config, bytes, ctx.signal)) {
    if (config.maxRows !== undefined && count + batch.length > config.maxRows) {
      const keep = batch.slice(0, config.maxRows - count)
      if (keep.length > 0) yield keep.map((data) => ({ data }))
      ctx.truncated(`Read the first ${config.maxRows} rows of '${path}' (maxRows); the file has more`)
      return
    }
    count += batch.length
    if (count > ctx.limits.maxRecords) {
      throw new ConnectorError(`File '${path}' holds more than ${ctx.limits.maxRecords} records, the service's limit per sync`)
    }
    yield batch.map((data) => ({ data }))
  }
}

function parse(config: FileConfig, bytes: ByteSource, signal: AbortSignal) {
  const common = { batchSize: BATCH_SIZE, encoding: config.encoding, signal }
  switch (config.format) {
    case 'csv':
    case 'tsv':
      return csvBatches(bytes, {
        ...common,
        hasHeaders: config.hasHeaders,
        delimiter: config.delimiter ?? (config.format === 'tsv' ? '\t' : ','),
        quoteChar: config.quoteChar,
        escapeChar: config.escapeChar,
        skipRows: config.skipRows,
      })
    case 'json':
      return jsonBatches(bytes, { ...common, jsonPath: config.jsonPath })
    case 'xml':
      return xmlBatches(bytes, { ...common, recordPath: config.jsonPath })
    case 'excel':
      return xlsxBatches(bytes, {
        batchSize: BATCH_SIZE,
        signal,
        sheetName: config.sheetName,
        sheetIndex: config.sheetIndex,
        hasHeaders: config.hasHeaders,
        skipRows: config.skipRows,
      })
  }
}

/** File store refusals (outside the root, missing, not a file) as sync errors with their safe message. */
async function fileAccess<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof FileAccessError) throw new ConnectorError(err.message)
    throw err
  }
}

/** The connector of one file source type (`file`, `csv`, `json`, `excel`). */
export const fileConnector = (type: FileSourceType): Connector<FileConfig> =>
  defineConnector<FileConfig>({ type, configSchema: fileConfigSchema(type), read: readFileSource })

export const csvConnector = fileConnector('csv')
export const jsonConnector = fileConnector('json')
export const excelConnector = fileConnector('excel')

export default fileConnector(CONNECTOR_TYPE)
