import { BulkProgress, type BulkSourceConfig, bulkCursor, kickOffUrl, Manifest, type ManifestFile } from './fhir-bulk-config.ts'
import { type BulkFiles, checkErrorFiles, fileRecords } from './fhir-bulk-files.ts'
import { createAuthenticator } from './shared/auth.ts'
import { createHttpClient, type HttpClient } from './shared/request.ts'
import { abortableSleep, parseRetryAfter } from './shared/retry.ts'
import { type ConnectorContext, ConnectorError, ReadSuspended, type SourceRecord } from './types.ts'

/**
 * FHIR Bulk Data `$export` (Bulk Data Access 2.0) for a `fhir` source with `mode: "bulk"`: the
 * kick-off, the polls of the status URL honouring `Retry-After`, the completion manifest, its
 * `error` files (read first: any line fails the sync before a record is written), its `output`
 * files streamed line by line, its `deleted` files on an incremental sync, and the job's `DELETE`.
 */

export const FHIR_JSON = 'application/fhir+json'
/** Resources per yielded batch. */
export const BULK_BATCH_SIZE = 500
/** No poll comes sooner than this after the answer before it, whatever its `Retry-After` says. */
export const MIN_POLL_MS = 1_000
/**
 * The first wait after a 202 without a usable `Retry-After` (none, unreadable, or under
 * MIN_POLL_MS: `0`, a date in the past); it doubles with each such answer in a row…
 */
export const DEFAULT_POLL_MS = 2_000
/** …up to this. A usable `Retry-After` is honoured as given and starts the doubling over. */
export const MAX_POLL_BACKOFF_MS = 30_000
/** The most one request of an export (kick-off, a poll, a file until its headers, a file's silence) may take. */
export const REQUEST_TIMEOUT_MS = 300_000
/** The `DELETE` of a finished, failed or cancelled job is given this long, on its own signal. */
const DELETE_TIMEOUT_MS = 5_000
/** While waiting between polls, a cancel of the sync is looked for this often. */
export const CANCEL_CHECK_MS = 1_000

/**
 * Reads one bulk export to its end. `config.timeout` bounds all of it (kick-off, polls and
 * downloads), counted from the kick-off across the invocations of a resumed sync; each request, and
 * each silence of a download, gets at most REQUEST_TIMEOUT_MS of it; `ctx.signal` (the sync's limit, a cancel) stops it too. With `since: "auto"`
 * the last batch (empty when nothing changed) carries the manifest's `transactionTime` as the cursor.
 *
 * With `ctx.resume` the export survives the end of an invocation: the job is saved once kicked
 * off, the manifest once complete, and each batch saves how far the files are read with its
 * commit. A wait for `Retry-After` longer than the invocation has left, or an invocation whose
 * budget is spent after a batch, ends in `ReadSuspended`; the next invocation goes on from the
 * saved progress (polling, or reading the files from the first line not yet committed).
 */
export async function* readBulk(
  config: BulkSourceConfig,
  ctx: ConnectorContext,
  outcomeText: (body: unknown) => string | undefined,
): AsyncGenerator<SourceRecord[]> {
  const resume = ctx.resume
  const saved = savedProgress(resume?.saved)
  const exportTimeout = config.timeout
  const startedAt = saved?.startedAt ?? ctx.now().getTime()
  const endsAt = startedAt + exportTimeout
  const deadline = new AbortController()
  const timer = setTimeout(() => deadline.abort(new BulkTimeout(exportTimeout)), Math.max(0, endsAt - ctx.now().getTime()))
  const signal = AbortSignal.any([ctx.signal, deadline.signal])
  const bctx: ConnectorContext = { ...ctx, signal }
  const requestMs = Math.min(config.timeout, REQUEST_TIMEOUT_MS)
  const limits = { retryAttempts: config.retryAttempts, retryDelayMs: config.retryDelay, timeoutMs: requestMs }
  const auth = createAuthenticator(config.authentication, bctx, limits)
  const describeFailure = (res: Response, body: string) => {
    const outcome = outcomeText(body)
    return outcome && `FHIR server responded ${res.status} with an OperationOutcome: ${outcome}`
  }
  const client = createHttpClient(bctx, { label: 'FHIR server', ...limits, auth, describeFailure })
  const origin = new URL(config.baseUrl).origin
  const since = saved ? saved.since : bulkCursor(config)
  if (!saved && config.bulk.since === 'auto' && config.lastSyncValue && since === undefined) {
    ctx.log.warn('the stored bulk cursor is not a FHIR instant; this sync is a whole export', {
      lastSyncValue: String(config.lastSyncValue).slice(0, 40),
    })
  }
  let statusUrl: URL | undefined
  /** Set when this invocation hands the export to the next one: the job is kept, not deleted. */
  let suspended = false
  /** The job is in the run's saved progress: a run handed back by a stopping service resumes it. */
  let jobSaved = saved !== undefined
  const save = async (progress: BulkProgress) => {
    if (!resume) return
    await resume.save(progress)
    jobSaved = true
  }
  const suspend = async (resumeAt: number, progress?: BulkProgress): Promise<never> => {
    if (progress) await save(progress)
    suspended = true
    throw new ReadSuspended(new Date(resumeAt))
  }
  const fail = (err: unknown, where: string): Error => {
    if (err instanceof ReadSuspended) return err
    if (deadline.signal.aborted && !ctx.signal.aborted) {
      return new ConnectorError(`The bulk export ran past the source's timeout (${exportTimeout} ms) ${where}`)
    }
    const known = client.failure(err)
    return new ConnectorError(`The FHIR bulk export failed ${where}: ${known.message}`, { cause: err })
  }
  try {
    let progress: BulkProgress
    if (saved) {
      statusUrl = new URL(saved.statusUrl)
      progress = saved
      if (statusUrl.origin !== origin) {
        throw new ConnectorError(`The saved export status URL is on another origin than ${origin}; the export is abandoned`)
      }
      if (ctx.now().getTime() >= endsAt) {
        throw new ConnectorError(
          `The bulk export ran past the source's timeout (${exportTimeout} ms) across the invocations of its sync`,
        )
      }
      if (await ctx.cancelRequested?.()) throw new ConnectorError('The FHIR bulk export was cancelled')
      if (!saved.manifest && saved.pollAt !== undefined && saved.pollAt > ctx.now().getTime()) await suspend(saved.pollAt)
    } else {
      try {
        statusUrl = await startExport(client, kickOffUrl(config, since), origin)
      } catch (err) {
        throw fail(err, 'at the kick-off')
      }
      progress = { statusUrl: statusUrl.href, startedAt, since }
      await save(progress)
    }
    const jobUrl = statusUrl
    let manifest = progress.manifest
    const files = (m: Manifest): BulkFiles => ({
      client: createHttpClient(bctx, {
        label: 'FHIR bulk file server',
        ...limits,
        auth: m.requiresAccessToken ? auth : createAuthenticator(undefined, bctx, limits),
        describeFailure,
      }),
      idleMs: requestMs,
    })
    const fileUrl = (m: Manifest, file: ManifestFile, kind: string) => {
      const url = new URL(file.url, jobUrl)
      if (m.requiresAccessToken && url.origin !== origin) {
        throw new ConnectorError(
          `The bulk export's ${kind} file ${url.origin}${url.pathname} is on another origin than ${origin}; the source's credentials are sent to ${origin} only`,
        )
      }
      return url
    }
    if (!manifest) {
      // The poll time is saved before each wait, so a run resumed later never polls earlier than
      // told; a wait longer than this invocation has left is the next invocation's.
      const beforeWait = async (waitMs: number) => {
        if (!resume) return
        const pollAt = ctx.now().getTime() + waitMs
        progress = { ...progress, pollAt }
        if (waitMs > resume.remainingMs()) await suspend(pollAt, progress)
        await save(progress)
      }
      try {
        manifest = await pollUntilDone(client, jobUrl, signal, { endsAt, timeoutMs: exportTimeout }, ctx, beforeWait)
      } catch (err) {
        throw fail(err, 'while polling the export status')
      }
      const found = manifest
      await checkErrorFiles(found, files(found), (file) => fileUrl(found, file, 'error'), fail, outcomeText, auth.secrets)
      progress = { statusUrl: progress.statusUrl, startedAt, since, manifest, at: { part: 0, line: 0 } }
      await save(progress)
    }
    const complete: Manifest = manifest
    const fileReader = files(complete)
    const parts = [
      ...complete.output.map((file) => ({ kind: 'output' as const, file })),
      ...(since !== undefined ? (complete.deleted ?? []).map((file) => ({ kind: 'deleted' as const, file })) : []),
    ]
    const from = progress.at ?? { part: 0, line: 0 }
    const types = config.bulk.types && new Set(config.bulk.types)
    // A batch goes as soon as it is full: nothing is held back, so at most one batch of resources
    // is alive at a time. The cursor comes with the last (maybe empty) batch; the sync stores it
    // with the switch of a full sync or once a staged incremental one is applied.
    let batch: SourceRecord[] = []
    /** How far the files are read once `batch` has committed: the progress saved with it. */
    let at = from
    const emitting = () => {
      const records = batch
      resume?.saveWithNextBatch({ ...progress, at })
      batch = []
      return records
    }
    for (let part = from.part; part < parts.length; part++) {
      const { kind, file } = parts[part]
      const url = fileUrl(complete, file, kind)
      const skip = part === from.part ? from.line : 0
      try {
        for await (const { records, number } of fileRecords(fileReader, url, { kind, file, types, skip }, ctx.log)) {
          for (let i = 0; i < records.length; i++) {
            batch.push(records[i])
            // A line whose records straddle a batch counts as done only with its last record.
            at = { part, line: i === records.length - 1 ? number : number - 1 }
            if (batch.length < BULK_BATCH_SIZE) continue
            yield emitting()
            // Committed: with this invocation's budget spent, the next one reads on from here.
            if (resume && resume.remainingMs() <= 0) await suspend(ctx.now().getTime())
          }
        }
      } catch (err) {
        throw fail(err, `reading the ${kind} file ${url.pathname}`)
      }
    }
    if (config.bulk.since === 'auto') {
      ctx.advanceCursor(complete.transactionTime)
      yield emitting()
    } else if (batch.length > 0) yield emitting()
  } finally {
    clearTimeout(timer)
    // A job this run goes on with later (suspended, or handed back by a stopping service) is kept.
    const kept = suspended || (jobSaved && resume?.handedBack() === true)
    if (statusUrl && !kept) await deleteJob(ctx, statusUrl, auth)
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
 * date), never less; one under MIN_POLL_MS, or none, waits `pollWait`'s backoff instead, so a
 * server answering `Retry-After: 0` is not polled in a loop. A wait that would end past the
 * deadline fails at once.
 */
async function pollUntilDone(
  client: HttpClient,
  statusUrl: URL,
  signal: AbortSignal,
  { endsAt, timeoutMs }: { endsAt: number; timeoutMs: number },
  ctx: ConnectorContext,
  beforeWait: (waitMs: number) => Promise<void>,
): Promise<Manifest> {
  /** 202s in a row without a usable `Retry-After`. */
  let unusable = 0
  for (;;) {
    const res = await client.send(statusUrl, { method: 'GET', headers: { Accept: 'application/json' } })
    if (res.status === 202) {
      await client.readBody(res)
      const asked = parseRetryAfter(res.headers.get('retry-after'))
      const { waitMs, told } = pollWait(asked, unusable)
      unusable = told ? 0 : unusable + 1
      if (ctx.now().getTime() + waitMs > endsAt) {
        const progress = res.headers.get('x-progress')
        const next = told
          ? `the FHIR server asked to poll again in ${Math.ceil(waitMs / 1000)} s`
          : `the next poll was due in ${Math.ceil(waitMs / 1000)} s (the FHIR server gave no usable Retry-After)`
        throw new ConnectorError(
          `The bulk export was not complete within the source's timeout (${timeoutMs} ms): ${next}${progress ? ` (progress: ${progress.slice(0, 100)})` : ''}`,
        )
      }
      ctx.log.debug('bulk export in progress', { waitMs, progress: res.headers.get('x-progress') ?? undefined })
      await beforeWait(waitMs)
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

/**
 * The wait after a 202 whose `Retry-After` asked for `askedMs` (undefined: none, or unreadable),
 * after `unusable` such answers in a row without a usable one. `told`: the server's own wait.
 */
export function pollWait(askedMs: number | undefined, unusable: number): { waitMs: number; told: boolean } {
  if (askedMs !== undefined && askedMs >= MIN_POLL_MS) return { waitMs: askedMs, told: true }
  const backoff = Math.min(MAX_POLL_BACKOFF_MS, DEFAULT_POLL_MS * 2 ** Math.min(unusable, 10))
  return { waitMs: Math.max(backoff, askedMs ?? 0), told: false }
}

/** The progress a suspended run saved (undefined on a first invocation); a garbled one fails the sync. */
function savedProgress(saved: unknown): BulkProgress | undefined {
  if (saved === undefined || saved === null) return undefined
  const parsed = BulkProgress.safeParse(saved)
  if (!parsed.success) throw new ConnectorError('The saved progress of this bulk export is not readable; the export is abandoned')
  return parsed.data
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
