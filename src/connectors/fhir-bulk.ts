import { textLines } from '../lib/formats/lines.ts'
import { type BulkSourceConfig, bulkCursor, kickOffUrl, Manifest, type ManifestFile } from './fhir-bulk-config.ts'
import { createAuthenticator } from './shared/auth.ts'
import { createHttpClient, type HttpClient, redact } from './shared/request.ts'
import { abortableSleep, parseRetryAfter } from './shared/retry.ts'
import { type ConnectorContext, ConnectorError, type SourceRecord } from './types.ts'

/**
 * FHIR Bulk Data `$export` (Bulk Data Access 2.0) for a `fhir` source with `mode: "bulk"`: the
 * kick-off, the polls of the status URL honouring `Retry-After`, the completion manifest, its
 * `error` files (read first: any line fails the sync before a record is written), its `output`
 * files streamed line by line, its `deleted` files on an incremental sync, and the job's `DELETE`.
 */

export const FHIR_JSON = 'application/fhir+json'
/** Resources per yielded batch. */
export const BULK_BATCH_SIZE = 500
/** The wait between polls when the server sends no `Retry-After`. */
export const DEFAULT_POLL_MS = 2_000
/** The `DELETE` of a finished, failed or cancelled job is given this long, on its own signal. */
const DELETE_TIMEOUT_MS = 5_000
/** While waiting between polls, a cancel of the sync is looked for this often. */
export const CANCEL_CHECK_MS = 1_000
/** How many error lines are quoted in the sync's message. */
const MAX_QUOTED_ERRORS = 5

/**
 * Reads one bulk export to its end. `config.timeout` bounds all of it (kick-off, polls and
 * downloads); `ctx.signal` (the sync's limit, a cancel) stops it too. With `since: "auto"` the last
 * batch (empty when nothing changed) carries the manifest's `transactionTime` as the cursor.
 */
export async function* readBulk(
  config: BulkSourceConfig,
  ctx: ConnectorContext,
  outcomeText: (body: unknown) => string | undefined,
): AsyncGenerator<SourceRecord[]> {
  const deadline = new AbortController()
  const timer = setTimeout(() => deadline.abort(new BulkTimeout(config.timeout)), config.timeout)
  const signal = AbortSignal.any([ctx.signal, deadline.signal])
  const bctx: ConnectorContext = { ...ctx, signal }
  const limits = { retryAttempts: config.retryAttempts, retryDelayMs: config.retryDelay, timeoutMs: config.timeout }
  const auth = createAuthenticator(config.authentication, bctx, limits)
  const describeFailure = (res: Response, body: string) => {
    const outcome = outcomeText(body)
    return outcome && `FHIR server responded ${res.status} with an OperationOutcome: ${outcome}`
  }
  const client = createHttpClient(bctx, { label: 'FHIR server', ...limits, auth, describeFailure })
  const origin = new URL(config.baseUrl).origin
  const since = bulkCursor(config)
  let statusUrl: URL | undefined
  const fail = (err: unknown, where: string): ConnectorError => {
    if (deadline.signal.aborted && !ctx.signal.aborted) {
      return new ConnectorError(`The bulk export ran past the source's timeout (${config.timeout} ms) ${where}`)
    }
    const known = client.failure(err)
    return new ConnectorError(`The FHIR bulk export failed ${where}: ${known.message}`, { cause: err })
  }
  try {
    const kickOff = kickOffUrl(config, since)
    try {
      statusUrl = await startExport(client, kickOff, origin)
    } catch (err) {
      throw fail(err, 'at the kick-off')
    }
    let manifest: Manifest
    try {
      manifest = await pollUntilDone(client, statusUrl, signal, config.timeout, ctx)
    } catch (err) {
      throw fail(err, 'while polling the export status')
    }
    const files = createHttpClient(bctx, {
      label: 'FHIR bulk file server',
      ...limits,
      auth: manifest.requiresAccessToken ? auth : createAuthenticator(undefined, bctx, limits),
      describeFailure,
    })
    const fileUrl = (file: ManifestFile, kind: string) => {
      const url = new URL(file.url, statusUrl)
      if (manifest.requiresAccessToken && url.origin !== origin) {
        throw new ConnectorError(
          `The bulk export's ${kind} file ${url.origin}${url.pathname} is on another origin than ${origin}; the source's credentials are sent to ${origin} only`,
        )
      }
      return url
    }
    // Errors first: a failed export applies nothing, not even the files it could have read.
    const errors: string[] = []
    let errorLines = 0
    for (const file of manifest.error ?? []) {
      const url = fileUrl(file, 'error')
      try {
        for await (const { line } of fileLines(files, url)) {
          errorLines++
          if (errors.length < MAX_QUOTED_ERRORS) errors.push(errorLineText(line, outcomeText))
        }
      } catch (err) {
        throw fail(err, `reading the error file ${url.pathname}`)
      }
    }
    if (errorLines > 0) {
      const more = errorLines > errors.length ? ` (and ${errorLines - errors.length} more)` : ''
      throw new ConnectorError(
        redact(
          `The FHIR bulk export reported ${errorLines} error${errorLines === 1 ? '' : 's'}: ${errors.join(' | ')}${more}`,
          auth.secrets,
        ),
      )
    }
    let batch: SourceRecord[] = []
    let held: SourceRecord[] | undefined
    // One full batch is held back, so the cursor rides on the last batch only (it advances after commit).
    const push = (record: SourceRecord): SourceRecord[] | undefined => {
      batch.push(record)
      if (batch.length < BULK_BATCH_SIZE) return undefined
      const ready = held
      held = batch
      batch = []
      return ready
    }
    for (const file of manifest.output) {
      const url = fileUrl(file, 'output')
      try {
        for await (const { line, number } of fileLines(files, url)) {
          const ready = push(resourceRecord(line, number, url))
          if (ready) yield ready
        }
      } catch (err) {
        throw fail(err, `reading the output file ${url.pathname}`)
      }
    }
    if (since !== undefined) {
      for (const file of manifest.deleted ?? []) {
        const url = fileUrl(file, 'deleted')
        try {
          for await (const { line, number } of fileLines(files, url)) {
            for (const record of deletedRecords(line, number, url)) {
              const ready = push(record)
              if (ready) yield ready
            }
          }
        } catch (err) {
          throw fail(err, `reading the deleted file ${url.pathname}`)
        }
      }
    }
    let last = batch
    if (held && batch.length === 0) last = held
    else if (held) yield held
    if (config.bulk.since === 'auto') {
      ctx.advanceCursor(manifest.transactionTime)
      yield last
    } else if (last.length > 0) yield last
  } finally {
    clearTimeout(timer)
    if (statusUrl) await deleteJob(ctx, statusUrl, auth)
  }
}

/** The `timeout` of a bulk source ran out: the reason its export signal aborts with. */
export class BulkTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`bulk export timed out after ${timeoutMs} ms`)
    this.name = 'BulkTimeout'
  }
}

// --- Internal helpers ---

/** The kick-off: 202 Accepted with a `Content-Location` on the base URL's origin (the status URL). */
async function startExport(client: HttpClient, url: URL, origin: string): Promise<URL> {
  const res = await client.send(url, { method: 'GET', headers: { Accept: FHIR_JSON, Prefer: 'respond-async' } })
  await client.readBody(res)
  if (res.status !== 202) {
    throw new ConnectorError(`The FHIR server answered ${res.status} to the $export kick-off, not 202 Accepted`)
  }
  const location = res.headers.get('content-location')
  if (!location) throw new ConnectorError('The FHIR server accepted the $export kick-off without a Content-Location')
  const status = new URL(location, url)
  if (status.origin !== origin) {
    throw new ConnectorError(
      `The FHIR server's export status URL is on another origin (${status.origin}); only ${origin} is polled`,
    )
  }
  return status
}

/**
 * Polls the status URL until the manifest (200). A 202 waits its `Retry-After` (seconds or an HTTP
 * date; DEFAULT_POLL_MS without one), never less; a wait that would end past the deadline fails at once.
 */
async function pollUntilDone(
  client: HttpClient,
  statusUrl: URL,
  signal: AbortSignal,
  timeoutMs: number,
  ctx: ConnectorContext,
): Promise<Manifest> {
  const endsAt = Date.now() + timeoutMs
  for (;;) {
    const res = await client.send(statusUrl, { method: 'GET', headers: { Accept: 'application/json' } })
    if (res.status === 202) {
      await client.readBody(res)
      const waitMs = parseRetryAfter(res.headers.get('retry-after')) ?? DEFAULT_POLL_MS
      if (Date.now() + waitMs > endsAt) {
        const progress = res.headers.get('x-progress')
        throw new ConnectorError(
          `The bulk export was not complete within the source's timeout (${timeoutMs} ms): the FHIR server asked to poll again in ${Math.ceil(waitMs / 1000)} s${progress ? ` (progress: ${progress.slice(0, 100)})` : ''}`,
        )
      }
      ctx.log.debug('bulk export in progress', { waitMs, progress: res.headers.get('x-progress') ?? undefined })
      // The wait is cut in slices so a cancel of the sync is seen within CANCEL_CHECK_MS.
      for (let left = waitMs; ; left -= CANCEL_CHECK_MS) {
        if (await ctx.cancelRequested?.())
          throw new ConnectorError('The FHIR bulk export was cancelled while the server prepared it')
        if (left <= 0) break
        await abortableSleep(Math.min(left, CANCEL_CHECK_MS), signal)
      }
      continue
    }
    if (res.status !== 200) {
      await client.readBody(res)
      throw new ConnectorError(`The FHIR server answered ${res.status} to an export status poll, not 202 or 200`)
    }
    const text = new TextDecoder().decode(await client.readBody(res))
    let doc: unknown
    try {
      doc = JSON.parse(text)
    } catch {
      throw new ConnectorError('The FHIR server answered a completion manifest that is not JSON')
    }
    const manifest = Manifest.safeParse(doc)
    if (!manifest.success) {
      const issue = manifest.error.issues[0]
      throw new ConnectorError(
        `The FHIR server's completion manifest is not valid: ${issue.path.join('.') || 'manifest'}: ${issue.message}`,
      )
    }
    return manifest.data
  }
}

/** The non-blank lines of one NDJSON file, streamed. */
async function* fileLines(client: HttpClient, url: URL): AsyncGenerator<{ line: string; number: number }> {
  const res = await client.send(url, { method: 'GET', headers: { Accept: 'application/fhir+ndjson' } })
  yield* textLines(client.stream(res))
}

function parseLine(line: string, number: number, url: URL): Record<string, unknown> {
  let doc: unknown
  try {
    doc = JSON.parse(line)
  } catch {
    throw new ConnectorError(`Line ${number} of the bulk file ${url.pathname} is not JSON`)
  }
  if (
    !doc ||
    typeof doc !== 'object' ||
    Array.isArray(doc) ||
    typeof (doc as { resourceType?: unknown }).resourceType !== 'string'
  ) {
    throw new ConnectorError(`Line ${number} of the bulk file ${url.pathname} is not a FHIR resource`)
  }
  return doc as Record<string, unknown>
}

/** An output line: the resource, keyed `Type/id`. */
function resourceRecord(line: string, number: number, url: URL): SourceRecord {
  const resource = parseLine(line, number, url)
  const id = typeof resource.id === 'string' && resource.id !== '' ? resource.id : undefined
  return id ? { key: `${resource.resourceType}/${id}`, data: resource } : { data: resource }
}

/**
 * A `deleted` line (Bulk Data 2.0): a Bundle whose entries' `request` is `DELETE Type/id`; each
 * becomes the removal of that key.
 */
function deletedRecords(line: string, number: number, url: URL): SourceRecord[] {
  const bundle = parseLine(line, number, url) as {
    resourceType: string
    entry?: { request?: { method?: string; url?: string } }[]
  }
  if (bundle.resourceType !== 'Bundle') {
    throw new ConnectorError(`Line ${number} of the deleted file ${url.pathname} is a ${bundle.resourceType}, not a Bundle`)
  }
  const out: SourceRecord[] = []
  for (const entry of Array.isArray(bundle.entry) ? bundle.entry : []) {
    const request = entry?.request
    if (request?.method?.toUpperCase() !== 'DELETE' || typeof request.url !== 'string') continue
    const match = /^([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/.*)?$/.exec(request.url.replace(/^\/+/, ''))
    if (!match)
      throw new ConnectorError(
        `Line ${number} of the deleted file ${url.pathname} deletes '${request.url.slice(0, 100)}', not Type/id`,
      )
    out.push({ key: `${match[1]}/${match[2]}`, data: { resourceType: match[1], id: match[2] }, deleted: true })
  }
  return out
}

/** An error file's line: its OperationOutcome's text, else the start of the line. */
function errorLineText(line: string, outcomeText: (body: unknown) => string | undefined): string {
  let doc: unknown
  try {
    doc = JSON.parse(line)
  } catch {
    return line.slice(0, 200)
  }
  return outcomeText(doc) ?? line.slice(0, 200)
}

/** Best effort: the server may keep the job's files until told; failures are only logged. */
async function deleteJob(ctx: ConnectorContext, statusUrl: URL, auth: ReturnType<typeof createAuthenticator>) {
  try {
    const headers = new Headers({ Accept: FHIR_JSON })
    await auth.apply(headers)
    const res = await ctx.fetch(statusUrl, { method: 'DELETE', headers, signal: AbortSignal.timeout(DELETE_TIMEOUT_MS) })
    await res.body?.cancel().catch(() => {})
    if (!res.ok) ctx.log.warn('the FHIR server refused to delete a bulk export job', { status: res.status })
  } catch (err) {
    ctx.log.warn('could not delete a bulk export job', { error: err instanceof Error ? err.message : String(err) })
  }
}
