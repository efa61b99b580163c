import { z } from 'zod'
import { evaluatePath, isValidPath } from './shared/json-path.ts'
import { type ConnectorContext, ConnectorError, defineConnector, type SourceRecord } from './types.ts'

export const CONNECTOR_TYPE = 'api'
export const BATCH_SIZE = 500
export const DEFAULT_TIMEOUT_MS = 30_000
/** The service's own limit on one API response (DATA-ENGINE: limits end a sync with an error). */
export const MAX_RESPONSE_BYTES = 50 * 1024 * 1024
/** Arrays looked for in an object response when no `dataPath` is configured, in this order. */
export const DEFAULT_ARRAY_FIELDS = ['data', 'items', 'results'] as const

const httpUrl = (v: string) => {
  try {
    return ['http:', 'https:'].includes(new URL(v).protocol)
  } catch {
    return false
  }
}

const Authentication = z
  .object({
    type: z.enum(['bearer', 'basic', 'api-key', 'oauth2']),
    token: z.string().optional(),
    username: z.string().optional(),
    password: z.string().optional(),
    apiKey: z.string().optional(),
    apiKeyHeader: z.string().min(1).optional(),
    clientId: z.string().optional(),
    clientSecret: z.string().optional(),
    tokenUrl: z.string().refine(httpUrl, 'must be an http or https URL').optional(),
    scope: z.string().optional(),
  })
  .passthrough()
  .superRefine((a, ctx) => {
    const need = (field: keyof typeof a) => {
      if (!a[field]) ctx.addIssue({ code: 'custom', path: [field], message: `required for ${a.type} authentication` })
    }
    if (a.type === 'bearer') need('token')
    if (a.type === 'basic') need('username')
    if (a.type === 'api-key') need('apiKey')
    if (a.type === 'oauth2') for (const f of ['clientId', 'clientSecret', 'tokenUrl'] as const) need(f)
  })

/** Config of an `api` source (spec §2.3 API); unknown fields pass through for later features. */
export const ApiConfig = z
  .object({
    apiEndpoint: z.string().refine(httpUrl, 'must be an http or https URL'),
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
    timeout: z.number().int().min(1).max(300_000).default(DEFAULT_TIMEOUT_MS),
    keyField: z.string().min(1).optional(),
  })
  .passthrough()

export type ApiConfig = z.infer<typeof ApiConfig>

/**
 * Reads one JSON response (DATA-ENGINE: Connectors, `api`): the records are the array at
 * `dataPath`, else the body when it is an array, else its first array among `data`, `items`,
 * `results`. Non-object items become `{ value: item }`. Yields batches of 500.
 */
export default defineConnector<ApiConfig>({
  type: CONNECTOR_TYPE,
  configSchema: ApiConfig,
  async *read(config, ctx) {
    if (config.responseFormat && config.responseFormat !== 'json') {
      throw new ConnectorError(`responseFormat '${config.responseFormat}' is not available yet in this version (json only)`)
    }
    if (config.paginationStyle !== undefined) {
      throw new ConnectorError('Paged API sources (paginationStyle) are not available yet in this version')
    }
    const doc = await request(config, ctx)
    const items = recordsFrom(doc, config.dataPath)
    for (let i = 0; i < items.length; i += BATCH_SIZE) {
      yield items.slice(i, i + BATCH_SIZE).map(toRecord)
    }
  },
})

// --- Internal helpers ---

async function request(config: ApiConfig, ctx: ConnectorContext): Promise<unknown> {
  const headers = new Headers({ Accept: 'application/json' })
  for (const [k, v] of Object.entries(config.headers ?? {})) headers.set(k, v)
  await authenticate(config, headers, ctx)
  let body: string | undefined
  if (config.body !== undefined && config.method !== 'GET') {
    body = typeof config.body === 'string' ? config.body : JSON.stringify(config.body)
    if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  }
  return guard(config, ctx, async () => {
    const res = await ctx.fetch(config.apiEndpoint, { method: config.method, headers, body, signal: ctx.signal })
    if (!res.ok) {
      await res.body?.cancel().catch(() => {})
      throw new ConnectorError(`API responded ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`)
    }
    return parseJson(await readBodyLimited(res, MAX_RESPONSE_BYTES), res.headers.get('content-type'))
  })
}

async function authenticate(config: ApiConfig, headers: Headers, ctx: ConnectorContext) {
  const auth = config.authentication
  if (!auth) return
  if (auth.type === 'bearer') headers.set('authorization', `Bearer ${auth.token}`)
  if (auth.type === 'basic') headers.set('authorization', `Basic ${base64(`${auth.username}:${auth.password ?? ''}`)}`)
  if (auth.type === 'api-key') headers.set(auth.apiKeyHeader ?? 'X-API-Key', auth.apiKey ?? '')
  if (auth.type === 'oauth2') headers.set('authorization', `Bearer ${await clientCredentialsToken(config, ctx)}`)
}

/** OAuth2 client credentials: one token per sync, so a token is never used after it expires. */
async function clientCredentialsToken(config: ApiConfig, ctx: ConnectorContext): Promise<string> {
  const auth = config.authentication!
  const form = new URLSearchParams({ grant_type: 'client_credentials' })
  if (auth.scope) form.set('scope', auth.scope)
  const doc = await guard(config, ctx, async () => {
    const res = await ctx.fetch(auth.tokenUrl!, {
      method: 'POST',
      headers: {
        authorization: `Basic ${base64(`${auth.clientId}:${auth.clientSecret}`)}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
      },
      body: form.toString(),
      signal: ctx.signal,
    })
    if (!res.ok) {
      await res.body?.cancel().catch(() => {})
      throw new ConnectorError(`OAuth2 token endpoint responded ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`)
    }
    return parseJson(await readBodyLimited(res, 1024 * 1024), res.headers.get('content-type'))
  })
  const token = (doc as { access_token?: unknown } | null)?.access_token
  if (typeof token !== 'string' || token === '') throw new ConnectorError('OAuth2 token endpoint answered no access_token')
  return token
}

/** Runs a request, turning aborts and network failures into clear connector errors. */
async function guard<T>(config: ApiConfig, ctx: ConnectorContext, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof ConnectorError) throw err
    if (ctx.signal.aborted) {
      const reason = ctx.signal.reason as { name?: string } | undefined
      throw new ConnectorError(
        reason?.name === 'TimeoutError' ? `API request timed out after ${config.timeout} ms` : 'API request was aborted',
      )
    }
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
    throw new ConnectorError(`API request to ${new URL(config.apiEndpoint).origin} failed: ${why}`)
  }
}

/** The body as bytes, refusing more than `max` (by Content-Length up front, else while reading). */
export async function readBodyLimited(res: Response, max: number): Promise<Uint8Array> {
  const tooLarge = () => new ConnectorError(`API response is larger than the ${formatBytes(max)} limit`)
  const declared = Number(res.headers.get('content-length') ?? Number.NaN)
  if (declared > max) {
    await res.body?.cancel().catch(() => {})
    throw tooLarge()
  }
  if (!res.body) return new Uint8Array()
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(value)
  }
  const out = new Uint8Array(size)
  let offset = 0
  for (const c of chunks) {
    out.set(c, offset)
    offset += c.byteLength
  }
  return out
}

function parseJson(bytes: Uint8Array, contentType: string | null): unknown {
  const text = new TextDecoder().decode(bytes)
  try {
    return JSON.parse(text)
  } catch {
    throw new ConnectorError(`API response is not valid JSON${contentType ? ` (content-type ${contentType.split(';')[0]})` : ''}`)
  }
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

const base64 = (s: string) => btoa(String.fromCharCode(...new TextEncoder().encode(s)))

const formatBytes = (n: number) => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`)
