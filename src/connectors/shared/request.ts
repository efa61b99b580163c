import { byteLimit, readBytesLimited } from '../../lib/streams.ts'
import { asConnectorError, type ConnectorContext, ConnectorError } from '../types.ts'
import { parseRetryAfter, RETRY_STATUSES, RetryableError, withRetry } from './retry.ts'

/**
 * Puts a source's credentials on its requests: what the client needs of them, which auth.ts
 * implements for every kind of authentication.
 */
export interface Authenticator {
  /** Sets the credentials on a request's headers (getting or refreshing an OAuth2 token first). */
  apply(headers: Headers): Promise<void>
  /**
   * After a 401: forgets an OAuth2 token that was not fetched for this very request, so the next
   * `apply` gets a new one. True when a retry can help.
   */
  invalidate(): Promise<boolean>
  /** Every secret value in play (to redact from messages): config secrets and issued tokens. */
  readonly secrets: readonly string[]
}

/** The service's own limit on one response that is parsed whole (JSON, XML). */
export const MAX_RESPONSE_BYTES = 50 * 1024 * 1024
/** How much of an error body is read to explain the failure. */
const ERROR_BODY_BYTES = 64 * 1024
const EXCERPT_CHARS = 200

export interface HttpClientOptions {
  /** Names the remote side in messages: "API", "FHIR server". */
  label: string
  /** Each request's limit (config `timeout`), until its body is read; see `createHttpClient`. */
  timeoutMs: number
  retryAttempts: number
  retryDelayMs: number
  auth: Authenticator
  /** Builds the message for a non-2xx answer (default: status and a short excerpt of the body). */
  describeFailure?: (res: Response, body: string) => string | undefined
}

/** Requests for one sync of one source: credentials, retries, and one byte budget for all bodies. */
export interface HttpClient {
  /** Sends a request; a 2xx response, else a ConnectorError (after retries and one 401 refresh). */
  send(url: string | URL, init: RequestInit): Promise<Response>
  /** The whole body, counted against the sync's byte budget and the per-response limit. */
  readBody(res: Response): Promise<Uint8Array>
  /** The body as a stream, counted against the sync's byte budget as it flows. */
  stream(res: Response): ReadableStream<Uint8Array>
  /** Turns anything thrown while reading into a safe ConnectorError (timeouts and cancels named). */
  failure(err: unknown, where?: string): ConnectorError
}

/** The abort reason of a request that ran past its own time limit (config `timeout`). */
export class RequestTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`request timed out after ${timeoutMs} ms`)
    this.name = 'RequestTimeout'
  }
}

/** A signal that aborts with the sync's signal, or with a RequestTimeout after `timeoutMs`. */
export function requestSignal(signal: AbortSignal, timeoutMs: number): { signal: AbortSignal; clear: () => void } {
  const own = new AbortController()
  const timer = setTimeout(() => own.abort(new RequestTimeout(timeoutMs)), timeoutMs)
  return { signal: AbortSignal.any([signal, own.signal]), clear: () => clearTimeout(timer) }
}

/**
 * The HTTP side of one sync of an `api` or `fhir` source. Each request has `timeoutMs` from
 * sending it until its body has been read (a streamed CSV body: until its headers, then the
 * sync's own limit applies); `ctx.signal` (the sync's limit, a cancel) stops everything.
 */
export function createHttpClient(ctx: ConnectorContext, options: HttpClientOptions): HttpClient {
  const { label, auth } = options
  const budget = { used: 0, max: ctx.limits.maxBytes }
  const timers = new WeakMap<Response, () => void>()
  const overBudget = () =>
    new ConnectorError(`${label} responses exceed the limit of ${formatBytes(budget.max)} read in one synchronisation`)

  async function attempt(url: string | URL, init: RequestInit): Promise<Response> {
    for (let refreshed = false; ; refreshed = true) {
      const headers = new Headers(init.headers)
      await auth.apply(headers)
      const request = requestSignal(ctx.signal, options.timeoutMs)
      let res: Response
      try {
        res = await ctx.fetch(url, { ...init, headers, signal: request.signal })
      } catch (err) {
        request.clear()
        // workerd rejects an aborted fetch with an AbortError of its own, not the signal's reason
        // (Node rejects with the reason): the request's own timeout is taken from the signal.
        const reason = request.signal.aborted ? request.signal.reason : undefined
        throw networkFailure(reason instanceof RequestTimeout ? reason : err, ctx, label, url)
      }
      if (res.ok) {
        timers.set(res, request.clear)
        return res
      }
      if (res.status === 401 && !refreshed && (await auth.invalidate())) {
        request.clear()
        await res.body?.cancel().catch(() => {})
        continue
      }
      const body = await readErrorBody(res)
      request.clear()
      const status = `${label} responded ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`
      const custom = options.describeFailure?.(res, body)
      const message = redact(custom ?? `${status}${excerptOf(body)}`, auth.secrets)
      if (RETRY_STATUSES.has(res.status)) throw new RetryableError(message, parseRetryAfter(res.headers.get('retry-after')))
      throw new ConnectorError(message)
    }
  }

  return {
    send: (url, init) =>
      withRetry(() => attempt(url, init), {
        attempts: options.retryAttempts,
        delayMs: options.retryDelayMs,
        signal: ctx.signal,
        onRetry: ({ attempt: n, waitMs, error }) =>
          ctx.log.warn('retrying request', { label, attempt: n, waitMs, reason: error.message }),
      }),

    async readBody(res) {
      const remaining = budget.max - budget.used
      try {
        const bytes =
          remaining < MAX_RESPONSE_BYTES
            ? await readBodyLimited(res, remaining, label, overBudget)
            : await readBodyLimited(res, MAX_RESPONSE_BYTES, `${label} response`)
        budget.used += bytes.byteLength
        return bytes
      } finally {
        timers.get(res)?.()
      }
    },

    stream(res) {
      timers.get(res)?.()
      const declared = Number(res.headers.get('content-length') ?? Number.NaN)
      if (declared > budget.max - budget.used) {
        res.body?.cancel().catch(() => {})
        throw overBudget()
      }
      const counter = byteLimit(budget.max - budget.used, overBudget, (bytes) => {
        budget.used += bytes
      })
      return (res.body ?? new Response('').body!).pipeThrough(counter.transform)
    },

    failure(err, where) {
      const known = asConnectorError(err)
      if (known instanceof ConnectorError) return known
      const request = `${label} request${where ? ` for ${where}` : ''}`
      if (err instanceof RequestTimeout && !ctx.signal.aborted) {
        return new ConnectorError(`${request} timed out after ${err.timeoutMs} ms (the source's timeout)`)
      }
      if (!ctx.signal.aborted) return new ConnectorError(redact(`${request} failed: ${reasonOf(err)}`, auth.secrets))
      const reason = ctx.signal.reason as { name?: string } | undefined
      if (reason?.name === 'TimeoutError') return new ConnectorError(`${request} was stopped by the synchronisation's time limit`)
      return new ConnectorError(`${request} was cancelled`)
    },
  }
}

/**
 * A fetch that threw: a network failure becomes a retryable error; an egress refusal a
 * ConnectorError; an abort is passed on as it is, for `HttpClient.failure` to name (timeout or cancel).
 */
export function networkFailure(err: unknown, ctx: ConnectorContext, label: string, url: string | URL): unknown {
  const known = asConnectorError(err)
  if (known instanceof ConnectorError || err instanceof RequestTimeout || ctx.signal.aborted) return known
  return new RetryableError(`${label} request to ${new URL(String(url)).origin} failed: ${reasonOf(err)}`)
}

/** The body as bytes, refusing more than `max` (by Content-Length up front, else while reading). */
export async function readBodyLimited(
  res: Response,
  max: number,
  what = 'API response',
  tooLarge: () => Error = () => new ConnectorError(`${what} is larger than the ${formatBytes(max)} limit`),
): Promise<Uint8Array> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN)
  if (declared > max) {
    await res.body?.cancel().catch(() => {})
    throw tooLarge()
  }
  if (!res.body) return new Uint8Array()
  return readBytesLimited(res.body, max, tooLarge)
}

/** ": <short excerpt>" of an error body (its message field when JSON), secrets redacted; "" when empty. */
export async function errorExcerpt(res: Response, secrets: readonly string[]): Promise<string> {
  return redact(excerptOf(await readErrorBody(res)), secrets)
}

/**
 * `text` with every secret value replaced by "<SECRET>", also as it reads percent-encoded in a URL
 * or form-encoded in a body (a server that echoes a token request quotes `client_secret=…` so).
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text
  for (const s of secrets) {
    if (s.length < 3) continue
    for (const form of new Set([s, encodeURIComponent(s), new URLSearchParams({ s }).toString().slice(2)])) {
      out = out.split(form).join('<SECRET>')
    }
  }
  return out
}

export const formatBytes = (n: number) => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`)

// --- Internal helpers ---

/** The start of an error body (at most ERROR_BODY_BYTES; the rest is dropped unread). */
async function readErrorBody(res: Response): Promise<string> {
  if (!res.body) return ''
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let size = 0
  try {
    while (size < ERROR_BODY_BYTES) {
      const { done, value } = await reader.read()
      if (done) return text + decoder.decode()
      size += value.byteLength
      text += decoder.decode(value, { stream: true })
    }
    await reader.cancel().catch(() => {})
    return text
  } catch {
    return text
  }
}

const MESSAGE_FIELDS = ['error_description', 'message', 'error', 'detail', 'title'] as const

function excerptOf(body: string): string {
  let text = body
  try {
    const doc = JSON.parse(body) as Record<string, unknown>
    const field = MESSAGE_FIELDS.find((f) => typeof doc?.[f] === 'string' && doc[f] !== '')
    if (field) text = doc[field] as string
  } catch {}
  text = text.replace(/\s+/g, ' ').trim()
  if (text === '') return ''
  return `: ${text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text}`
}

function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err))
}
