import { z } from 'zod'
import { csvBatches } from '../lib/formats/csv.ts'
import { FormatError } from '../lib/formats/errors.ts'
import { evaluatePath, isValidPath } from '../lib/formats/json-path.ts'
import { xmlRecords } from '../lib/formats/xml.ts'
import { Authentication } from './shared/auth.ts'
import { gathered } from './shared/gather.ts'
import {
  DEFAULT_HTTP_TIMEOUT_MS,
  httpUrl,
  NO_CREDENTIALS_MESSAGE,
  requestFields,
  withoutCredentials,
} from './shared/http-config.ts'
import { type LoadedPage, paginate, pagingFields } from './shared/paginate.ts'
import type { HttpClient } from './shared/request.ts'
import { sourceClient } from './shared/source-client.ts'
import { ConnectorError, defineConnector, type SourceRecord } from './types.ts'

export { readBodyLimited } from './shared/request.ts'

export const CONNECTOR_TYPE = 'api'
export const BATCH_SIZE = 500
export const DEFAULT_TIMEOUT_MS = DEFAULT_HTTP_TIMEOUT_MS
/** Arrays looked for in an object response when no `dataPath` is configured, in this order. */
export const DEFAULT_ARRAY_FIELDS = ['data', 'items', 'results'] as const

const ACCEPT = {
  json: 'application/json',
  xml: 'application/xml, text/xml;q=0.9',
  csv: 'text/csv, text/plain;q=0.5',
} as const

/** Config of an `api` source (spec §2.3 API); unknown fields pass through. */
export const ApiConfig = z
  .object({
    apiEndpoint: z.string().refine(httpUrl, 'must be an http or https URL').refine(withoutCredentials, NO_CREDENTIALS_MESSAGE),
    method: z
      .string()
      .transform((m) => m.toUpperCase())
      .pipe(z.enum(['GET', 'POST', 'PUT', 'PATCH']))
      .default('GET'),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
    authentication: Authentication.optional(),
    responseFormat: z.enum(['json', 'xml', 'csv']).optional(),
    dataPath: z.string().refine(isValidPath, 'must be a path like $.data.items, items[0].rows or items[*].resource').optional(),
    /** CSV responses: a header row names the fields (default true), and the field delimiter. */
    hasHeaders: z.boolean().default(true),
    delimiter: z.string().min(1).max(4).optional(),
    ...pagingFields,
    ...requestFields,
    keyField: z.string().min(1).optional(),
  })
  .passthrough()

export type ApiConfig = z.infer<typeof ApiConfig>
type Format = keyof typeof ACCEPT

/**
 * Reads an HTTP API (DATA-ENGINE: Connectors, `api`): each page's records are the array at
 * `dataPath`, else the body when it is an array, else its first array among `data`, `items`,
 * `results` (JSON); the elements at `dataPath` or the root's repeated children (XML); the rows
 * (CSV, streamed). Paging, retries and authentication follow DATA-ENGINE's conventions; all
 * response bytes count against the sync's byte limit. Non-object items become `{ value: item }`.
 */
export default defineConnector<ApiConfig>({
  type: CONNECTOR_TYPE,
  configSchema: ApiConfig,
  async *read(config, ctx) {
    const client = sourceClient(ctx, config, 'API')
    const init = requestInit(config)
    let page = 1
    try {
      const pages = paginate(config.apiEndpoint, config, ctx, (url, n) => {
        page = n
        return loadPage(config, client, url, init, n)
      })
      // Pages gathered into batches of 500 (an API's default page is often 20 or 100): an `api`
      // read is always a full sync (gather.ts).
      for await (const items of gathered(pages, BATCH_SIZE)) yield items.map(toRecord)
    } catch (err) {
      throw client.failure(err, config.paginationStyle ? `page ${page}` : undefined)
    }
  },
})

// --- Internal helpers ---

function requestInit(config: ApiConfig): RequestInit {
  const headers = new Headers({ Accept: ACCEPT[config.responseFormat ?? 'json'] })
  for (const [k, v] of Object.entries(config.headers ?? {})) headers.set(k, v)
  let body: string | undefined
  if (config.body !== undefined && config.body !== null && config.method !== 'GET') {
    body = typeof config.body === 'string' ? config.body : JSON.stringify(config.body)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  return { method: config.method, headers, body }
}

async function loadPage(
  config: ApiConfig,
  client: HttpClient,
  url: URL,
  init: RequestInit,
  page: number,
): Promise<LoadedPage<unknown>> {
  const res = await client.send(url, init)
  const format = config.responseFormat ?? formatOf(res.headers.get('content-type'))
  if (format === 'csv') {
    const batches = csvBatches(client.stream(res), {
      hasHeaders: config.hasHeaders,
      delimiter: config.delimiter,
      batchSize: BATCH_SIZE,
    })
    return { batches, headers: res.headers }
  }
  const text = new TextDecoder().decode(await client.readBody(res))
  const doc = format === 'xml' ? undefined : parseJson(text, res.headers.get('content-type'))
  const items = format === 'xml' ? xmlItems(text, config.dataPath, page) : recordsFrom(doc, config.dataPath)
  return { batches: chunks(items, BATCH_SIZE), doc, headers: res.headers }
}

/** Without `responseFormat`, the Content-Type decides; JSON unless it says XML or CSV. */
function formatOf(contentType: string | null): Format {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase()
  if (type === 'text/csv' || type === 'application/csv') return 'csv'
  if (type === 'application/xml' || type === 'text/xml' || type.endsWith('+xml')) return 'xml'
  return 'json'
}

/**
 * XML records at `dataPath` (or the root's repeated children). On a later page a path that matches
 * nothing is an empty page (an empty list element has no children), which ends the paging.
 */
function xmlItems(text: string, dataPath: string | undefined, page: number): unknown[] {
  try {
    return xmlRecords(text, { recordPath: dataPath })
  } catch (err) {
    if (page > 1 && dataPath && err instanceof FormatError && err.message.startsWith('Record path ')) return []
    throw err
  }
}

function parseJson(text: string, contentType: string | null): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new ConnectorError(`API response is not valid JSON${contentType ? ` (content-type ${contentType.split(';')[0]})` : ''}`)
  }
}

function* chunks<T>(items: T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size)
}

const describe = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : `${typeof v === 'object' ? 'an' : 'a'} ${typeof v}`

/** The array of records in a parsed response; a clear error when there is none. */
export function recordsFrom(doc: unknown, dataPath?: string): unknown[] {
  if (dataPath) {
    const value = evaluatePath(doc, dataPath)
    if (Array.isArray(value)) return value
    throw new ConnectorError(
      value === undefined
        ? `dataPath "${dataPath}" matches nothing in the API response`
        : `dataPath "${dataPath}" points to ${describe(value)} in the API response, not an array`,
    )
  }
  if (Array.isArray(doc)) return doc
  if (doc && typeof doc === 'object') {
    for (const field of DEFAULT_ARRAY_FIELDS) {
      const value = (doc as Record<string, unknown>)[field]
      if (Array.isArray(value)) return value
    }
  }
  throw new ConnectorError(
    `The API response is ${describe(doc)}, not an array of records; set dataPath to the array (e.g. "$.data.items")`,
  )
}

const toRecord = (item: unknown): SourceRecord =>
  item && typeof item === 'object' && !Array.isArray(item) ? { data: item as Record<string, unknown> } : { data: { value: item } }
