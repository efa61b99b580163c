import type { ServiceDeps } from '../../context.ts'
import { createGuardedFetch } from '../../lib/egress/guarded-fetch.ts'
import { signBody } from './subscriptions.sign.ts'
import { urlRefusal, WEBHOOK_PURPOSE } from './subscriptions.url.ts'

/** One POST to a subscriber. */
export interface AttemptRequest {
  url: string
  secret: string
  /** The raw body: exactly the bytes that are signed. */
  body: string
  eventId: string
  eventType: string
  deliveryId: string
  attempt: number
  /** `application/json` unless given (a FHIR topic notification is `application/fhir+json`). */
  contentType?: string
  /** The subscriber's own headers (a FHIR Subscription's channel.header); the delivery's headers win. */
  headers?: Record<string, string>
  /** A shorter time-out than WEBHOOK_TIMEOUT_MS (a FHIR Subscription's timeout extension). */
  timeoutMs?: number
}

/** How one attempt went: a 2xx acknowledges; anything else is a failure with its reason. */
export interface AttemptOutcome {
  ok: boolean
  /** The service began to stop (`deps.stopping`) during the attempt: nothing is known of it. */
  interrupted?: boolean
  statusCode: number | null
  durationMs: number
  error: string | null
}

/**
 * Sends one attempt (docs/live.md "Delivery"): POST with the signed body and the X-Event-*,
 * X-Delivery-* headers, through the outbound network guard (the URL is checked again before every
 * attempt), redirects not followed, WEBHOOK_TIMEOUT_MS for the answer's headers. Never throws: a
 * refusal, a network error or a time-out is an outcome with `ok: false`. A stop of the service
 * (`deps.stopping`) aborts the request: the outcome is `interrupted`, and the queue leaves the
 * delivery as it was, to be sent again after the restart (at least once).
 */
export async function sendAttempt(deps: ServiceDeps, req: AttemptRequest): Promise<AttemptOutcome> {
  const refusal = await urlRefusal(deps, req.url)
  if (refusal) return { ok: false, statusCode: null, durationMs: 0, error: `Refused: ${refusal}` }
  const timeoutMs = Math.min(deps.config.webhooks.timeoutMs, req.timeoutMs ?? Number.POSITIVE_INFINITY)
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), timeoutMs)
  const stop = () => abort.abort()
  deps.stopping?.addEventListener('abort', stop)
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const guarded = createGuardedFetch({
    fetch: deps.outbound.fetch,
    resolveHost: deps.outbound.resolveHost,
    allowPrivate: deps.config.allowPrivateNetworkSources,
    followRedirects: false,
    purpose: WEBHOOK_PURPOSE,
  })
  try {
    const res = await guarded(req.url, {
      method: 'POST',
      body: req.body,
      signal: abort.signal,
      headers: {
        ...req.headers,
        'Content-Type': req.contentType ?? 'application/json',
        'User-Agent': 'panels-webhooks/1',
        'X-Event-Id': req.eventId,
        'X-Event-Type': req.eventType,
        'X-Delivery-Id': req.deliveryId,
        'X-Delivery-Attempt': String(req.attempt),
        'X-Signature-256': await signBody(req.secret, req.body),
      },
    })
    await res.body?.cancel().catch(() => {})
    const durationMs = elapsed()
    if (res.status >= 200 && res.status < 300) return { ok: true, statusCode: res.status, durationMs, error: null }
    const redirect = res.status >= 300 && res.status < 400 ? ' (redirects are not followed)' : ''
    return { ok: false, statusCode: res.status, durationMs, error: `HTTP ${res.status}${redirect}` }
  } catch (err) {
    const durationMs = elapsed()
    if (deps.stopping?.aborted)
      return { ok: false, interrupted: true, statusCode: null, durationMs, error: 'Interrupted: the service is stopping' }
    if (abort.signal.aborted) return { ok: false, statusCode: null, durationMs, error: `Timed out after ${timeoutMs} ms` }
    return { ok: false, statusCode: null, durationMs, error: reasonOf(err) }
  } finally {
    clearTimeout(timer)
    deps.stopping?.removeEventListener('abort', stop)
  }
}

/** A network error's message with its cause's code where the runtime gives one ("fetch failed (ECONNREFUSED)"). */
function reasonOf(err: unknown): string {
  const message = (err as Error)?.message || String(err)
  const code = (err as { cause?: { code?: unknown } })?.cause?.code
  return typeof code === 'string' ? `${message} (${code})` : message
}
