import { ConnectorError } from '../types.ts'

/** Statuses worth another try: rate limited, or a gateway/upstream that may recover. */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504])
export const DEFAULT_RETRY_ATTEMPTS = 2
export const MAX_RETRY_ATTEMPTS = 10
export const DEFAULT_RETRY_DELAY_MS = 500
/** No single wait is longer than this, whatever the backoff or a `Retry-After` asks for. */
export const MAX_RETRY_WAIT_MS = 60_000

/**
 * A failure that may pass on another try (a retryable status or a network error). The message is
 * safe to show; `retryAfterMs` is the server's `Retry-After`, when it sent one.
 */
export class RetryableError extends ConnectorError {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message)
    this.name = 'RetryableError'
  }
}

export interface RetryOptions {
  /** Tries after the first one (config `retryAttempts`). */
  attempts: number
  /** Base delay of the exponential backoff (config `retryDelay`). */
  delayMs: number
  signal: AbortSignal
  maxWaitMs?: number
  /** Injectable for tests. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>
  random?: () => number
  /** Called before each wait, e.g. to log it. */
  onRetry?: (info: { attempt: number; waitMs: number; error: RetryableError }) => void
}

/**
 * Runs `run` until it succeeds, throws anything but a RetryableError, or `attempts` retries are
 * spent (then a ConnectorError saying how many tries were made). The wait before retry n is the
 * server's `Retry-After` when given (capped), else full jitter: random(0, delay · 2ⁿ⁻¹), capped.
 * An abort ends the wait at once and is never retried.
 */
export async function withRetry<T>(run: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const sleep = options.sleep ?? abortableSleep
  const random = options.random ?? Math.random
  const cap = options.maxWaitMs ?? MAX_RETRY_WAIT_MS
  for (let attempt = 0; ; attempt++) {
    try {
      return await run(attempt)
    } catch (err) {
      if (!(err instanceof RetryableError) || options.signal.aborted) throw err
      if (attempt >= options.attempts) {
        throw new ConnectorError(attempt === 0 ? err.message : `${err.message} (gave up after ${attempt + 1} attempts)`)
      }
      const waitMs =
        err.retryAfterMs !== undefined ? Math.min(err.retryAfterMs, cap) : backoffDelay(attempt, options.delayMs, random, cap)
      options.onRetry?.({ attempt: attempt + 1, waitMs, error: err })
      await sleep(waitMs, options.signal)
    }
  }
}

/** Full-jitter exponential backoff: a uniform wait in [0, min(cap, base · 2^attempt)). */
export function backoffDelay(attempt: number, baseMs: number, random: () => number = Math.random, capMs = MAX_RETRY_WAIT_MS) {
  return Math.floor(random() * Math.min(capMs, baseMs * 2 ** attempt))
}

/**
 * `Retry-After` in milliseconds: delay-seconds or an HTTP date (relative to `now`); undefined
 * when absent or unreadable. A date in the past means "now" (0).
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined
  const text = value.trim()
  if (/^\d+$/.test(text)) return Number(text) * 1000
  if (!/[a-z]/i.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** Waits `ms`, rejecting with the signal's reason as soon as it aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
