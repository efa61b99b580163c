import { z } from 'zod'
import { readBulk } from './fhir-bulk.ts'
import { BulkConfig, bulkCursor, DEFAULT_EXPORT_TIMEOUT_MS, MAX_EXPORT_TIMEOUT_MS, resourceTypeName } from './fhir-bulk-config.ts'
import { SubscriptionConfig } from './fhir-subscription-config.ts'
import { Authentication } from './shared/auth.ts'
import { gathered } from './shared/gather.ts'
import {
  DEFAULT_HTTP_TIMEOUT_MS,
  httpUrl,
  MAX_HTTP_TIMEOUT_MS,
  maxPagesField,
  NO_CREDENTIALS_MESSAGE,
  requestFields,
  withoutCredentials,
} from './shared/http-config.ts'
import type { HttpClient } from './shared/request.ts'
import { sourceClient } from './shared/source-client.ts'
import { type ConnectorContext, ConnectorError, defineConnector, type SourceRecord } from './types.ts'

export const CONNECTOR_TYPE = 'fhir'
export const BATCH_SIZE = 500
export const FHIR_JSON = 'application/fhir+json'

const paramValue = z.union([z.string(), z.number(), z.boolean()])

/**
 * Config of a `fhir` source (DATA-ENGINE: Connector conventions, FHIR); unknown fields pass through.
 * `timeout` bounds a search's each request (at most 5 min, 30 s when left out) and a bulk export
 * as a whole, kick-off to last byte across the invocations of a resumed sync (FHIR-EXCHANGE: "In
 * 1"; at most 24 h, 1 h when left out).
 */
export const FhirConfig = z.preprocess(
  (v) =>
    v && typeof v === 'object' && (v as { mode?: unknown }).mode === 'bulk' && (v as { timeout?: unknown }).timeout === undefined
      ? { ...v, timeout: DEFAULT_EXPORT_TIMEOUT_MS }
      : v,
  z
    .object({
      baseUrl: z.string().refine(httpUrl, 'must be an http or https URL').refine(withoutCredentials, NO_CREDENTIALS_MESSAGE),
      /** `search` (the default): FHIR searches. `bulk`: a Bulk Data `$export` (fhir-bulk.ts). */
      mode: z.enum(['search', 'bulk']).optional(),
      bulk: BulkConfig.optional(),
      /** Search mode: a live source fed by FHIR Subscription notifications (fhir-subscription-config.ts). */
      subscription: SubscriptionConfig.optional(),
      /** Mode bulk with since auto: the transactionTime of the last export applied (stored by the sync). */
      lastSyncValue: z.string().optional(),
      resourceType: resourceTypeName.optional(),
      resourceTypes: z.array(resourceTypeName).min(1).max(50).optional(),
      /** A query string (`name=smith&_sort=birthdate`) or an object (values may be lists: repeated). */
      searchParams: z.union([z.string(), z.record(z.string(), z.union([paramValue, z.array(paramValue)]))]).optional(),
      pageSize: z.number().int().min(1).max(1000).optional(),
      maxPages: maxPagesField,
      authentication: Authentication.optional(),
      ...requestFields,
      timeout: z.number().int().min(1).max(MAX_EXPORT_TIMEOUT_MS).default(DEFAULT_HTTP_TIMEOUT_MS),
      keyField: z.string().min(1).optional(),
    })
    .passthrough()
    .superRefine(
      (c, ctx) => {
        if (c.mode !== 'bulk' && c.timeout > MAX_HTTP_TIMEOUT_MS) {
          ctx.addIssue({
            code: 'custom',
            path: ['timeout'],
            message: `must be at most ${MAX_HTTP_TIMEOUT_MS} (a request's limit); up to ${MAX_EXPORT_TIMEOUT_MS} for a bulk export`,
          })
        }
        if (c.mode === 'bulk') {
          if (!c.bulk) ctx.addIssue({ code: 'custom', path: ['bulk'], message: 'required for mode bulk' })
          if (c.subscription) ctx.addIssue({ code: 'custom', path: ['subscription'], message: 'only for mode search' })
        } else if (c.bulk) {
          ctx.addIssue({ code: 'custom', path: ['bulk'], message: 'only for mode bulk' })
        } else if (!c.resourceType && !c.resourceTypes) {
          ctx.addIssue({ code: 'custom', path: ['resourceType'], message: 'required (or resourceTypes, a list of them)' })
        }
      },
      { when: ({ value }) => typeof value === 'object' && value !== null },
    ), // named even beside other bad fields
)

export type FhirConfig = z.infer<typeof FhirConfig>

/** The resource types a search-mode source reads (`resourceTypes`, else its one `resourceType`). */
export const searchedTypes = (config: Pick<FhirConfig, 'resourceType' | 'resourceTypes'>): Set<string> =>
  new Set(config.resourceTypes ?? (config.resourceType ? [config.resourceType] : []))

interface Bundle {
  resourceType: 'Bundle'
  link?: { relation?: string; url?: string }[]
  entry?: { resource?: Record<string, unknown>; search?: { mode?: string } }[]
}

/**
 * FHIR R4 search (DATA-ENGINE: `fhir`): `GET {baseUrl}/{type}?{searchParams}&_count={pageSize}`
 * for each resource type, following `Bundle.link[relation=next]` on the base URL's origin. The
 * records are the entries' resources of that type (included resources and OperationOutcome
 * entries skipped), keyed `Type/id`. An OperationOutcome answer is an error carrying its issues'
 * text. `maxPages` caps each type's search.
 */
export default defineConnector<FhirConfig>({
  type: CONNECTOR_TYPE,
  configSchema: FhirConfig,
  // A bulk source with `since: "auto"` and a stored transactionTime reads only the changes since.
  mode: (config) =>
    config.mode === 'bulk' && config.bulk && bulkCursor({ ...config, bulk: config.bulk }) ? 'incremental' : 'full',
  // A bulk export applies nothing until its files are all read: a broken download applies nothing.
  appliesAtEnd: (config) => config.mode === 'bulk',
  async *read(config, ctx) {
    if (config.mode === 'bulk' && config.bulk) {
      yield* readBulk({ ...config, bulk: config.bulk }, ctx, outcomeText)
      return
    }
    const client = sourceClient(ctx, config, 'FHIR server', (res, body) => {
      const outcome = outcomeText(body)
      return outcome && `FHIR server responded ${res.status} with an OperationOutcome: ${outcome}`
    })
    const types = [...searchedTypes(config)]
    for (const type of types) yield* search(config, ctx, client, type)
  },
})

/** The search URL of one resource type: base URL, type, search parameters and `_count`. */
export function searchUrl(config: FhirConfig, type: string): URL {
  const url = new URL(`${config.baseUrl.replace(/\/+$/, '')}/${type}`)
  const params = config.searchParams
  if (typeof params === 'string') {
    for (const [k, v] of new URLSearchParams(params.replace(/^\?/, ''))) url.searchParams.append(k, v)
  } else if (params) {
    for (const [k, v] of Object.entries(params)) {
      for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(one))
    }
  }
  if (config.pageSize !== undefined) url.searchParams.set('_count', String(config.pageSize))
  return url
}

/**
 * The text of an OperationOutcome's issues ("severity: diagnostics"), or undefined when `body` is
 * not one.
 */
export function outcomeText(body: string | unknown): string | undefined {
  let doc: unknown = body
  if (typeof body === 'string') {
    try {
      doc = JSON.parse(body)
    } catch {
      return undefined
    }
  }
  const outcome = doc as { resourceType?: unknown; issue?: unknown } | null
  if (outcome?.resourceType !== 'OperationOutcome') return undefined
  const issues = Array.isArray(outcome.issue) ? (outcome.issue as Record<string, any>[]) : []
  const texts = issues.map((i) => {
    const text = i?.diagnostics ?? i?.details?.text ?? i?.details?.coding?.[0]?.display ?? i?.code ?? 'unknown issue'
    return `${i?.severity ? `${i.severity}: ` : ''}${String(text)}`
  })
  const joined = texts.length > 0 ? texts.join('; ') : 'no issue given'
  return joined.length > 500 ? `${joined.slice(0, 500)}…` : joined
}

// --- Internal helpers ---

/**
 * The resources of one type's search, page after page, gathered into batches of BATCH_SIZE (a
 * server's default `_count` is often 20; a search is always a full sync, see gather.ts).
 */
const search = (config: FhirConfig, ctx: ConnectorContext, client: HttpClient, type: string) =>
  gathered(searchPages(config, ctx, client, type), BATCH_SIZE)

/** The searched resources of each page of one type's search, following `link[next]`. */
async function* searchPages(config: FhirConfig, ctx: ConnectorContext, client: HttpClient, type: string) {
  const origin = new URL(config.baseUrl).origin
  const seen = new Set<string>()
  let url: URL | undefined = searchUrl(config, type)
  for (let page = 1; url; page++) {
    seen.add(url.href)
    let bundle: Bundle
    try {
      bundle = await fetchBundle(client, url, type)
    } catch (err) {
      throw client.failure(err, `${type} page ${page}`)
    }
    const records = recordsOf(bundle, type)
    const warnings = (bundle.entry ?? []).filter((e) => e?.search?.mode === 'outcome').map((e) => outcomeText(e.resource))
    if (warnings.length > 0) ctx.log.warn('FHIR search returned an OperationOutcome entry', { type, page, issues: warnings })
    yield records
    const next = bundle.link?.find((l) => l?.relation === 'next')?.url
    if (!next) return
    const nextUrl = new URL(next, url)
    if (nextUrl.origin !== origin) {
      throw new ConnectorError(
        `The FHIR server's next link for ${type} points to another origin (${nextUrl.origin}); only ${origin} is followed`,
      )
    }
    if (seen.has(nextUrl.href)) throw new ConnectorError(`The FHIR server's next link for ${type} repeats a page already read`)
    if (config.maxPages !== undefined && page >= config.maxPages) {
      ctx.truncated(`Stopped ${type} at maxPages (${config.maxPages} pages); the FHIR server had more pages`)
      return
    }
    url = nextUrl
  }
}

async function fetchBundle(client: HttpClient, url: URL, type: string): Promise<Bundle> {
  const res = await client.send(url, { method: 'GET', headers: { Accept: FHIR_JSON } })
  const text = new TextDecoder().decode(await client.readBody(res))
  let doc: { resourceType?: unknown } | null
  try {
    doc = JSON.parse(text)
  } catch {
    throw new ConnectorError(`The FHIR server's answer to the ${type} search is not JSON`)
  }
  const outcome = outcomeText(doc)
  if (outcome !== undefined) throw new ConnectorError(`FHIR server answered an OperationOutcome: ${outcome}`)
  if (doc?.resourceType !== 'Bundle') {
    const what = typeof doc?.resourceType === 'string' ? `a ${doc.resourceType}` : 'something that is not a FHIR resource'
    throw new ConnectorError(`The FHIR server answered ${what}, not a Bundle, to the ${type} search`)
  }
  return doc as Bundle
}

/** The searched resources of a Bundle page: `include` and `outcome` entries and other types skipped. */
function recordsOf(bundle: Bundle, type: string): SourceRecord[] {
  const records: SourceRecord[] = []
  for (const entry of bundle.entry ?? []) {
    const resource = entry?.resource
    if (!resource || typeof resource !== 'object' || resource.resourceType !== type) continue
    const mode = entry.search?.mode
    if (mode === 'include' || mode === 'outcome') continue
    const id = typeof resource.id === 'string' && resource.id !== '' ? resource.id : undefined
    records.push(id ? { key: `${type}/${id}`, data: resource } : { data: resource })
  }
  return records
}
