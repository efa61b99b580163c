import { z } from 'zod'
import type { ConnectorContext } from '../types.ts'
import { ConnectorError } from '../types.ts'
import { httpUrl } from './http-config.ts'
import { type Authenticator, errorExcerpt, networkFailure, RequestTimeout, readBodyLimited, requestSignal } from './request.ts'
import { parseRetryAfter, RETRY_STATUSES, RetryableError, withRetry } from './retry.ts'

export const DEFAULT_API_KEY_HEADER = 'X-API-Key'
/** A token is refreshed this long before it expires (at most), so it is never sent expired. */
export const MAX_REFRESH_MARGIN_MS = 30_000
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024

const AUTH_TYPES = ['bearer', 'basic', 'api-key', 'oauth2'] as const

/**
 * `authentication` of an `api` or `fhir` source (spec §2.3 API authentication). Missing
 * credentials are named even when other fields are bad too (`when`).
 */
export const Authentication = z
  .object({
    type: z.enum(AUTH_TYPES),
    token: z.string().optional(),
    username: z.string().optional(),
    password: z.string().optional(),
    apiKey: z.string().optional(),
    apiKeyHeader: z
      .string()
      .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name')
      .optional(),
    clientId: z.string().optional(),
    clientSecret: z.string().optional(),
    tokenUrl: z.string().refine(httpUrl, 'must be an http or https URL').optional(),
    scope: z.string().optional(),
    /** How the client authenticates at the token endpoint (RFC 6749 §2.3.1). */
    tokenAuthMethod: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
  })
  .passthrough()
  .superRefine(
    (a, ctx) => {
      const need = (field: keyof typeof a) => {
        if (!a[field]) ctx.addIssue({ code: 'custom', path: [field], message: `required for ${a.type} authentication` })
      }
      if (a.type === 'bearer') need('token')
      if (a.type === 'basic') need('username')
      if (a.type === 'api-key') need('apiKey')
      if (a.type === 'oauth2') for (const f of ['clientId', 'clientSecret', 'tokenUrl'] as const) need(f)
    },
    { when: ({ value }) => AUTH_TYPES.includes((value as { type?: never } | null)?.type as never) },
  )

export type Authentication = z.infer<typeof Authentication>

export interface AuthOptions {
  retryAttempts: number
  retryDelayMs: number
  /** The token request's own time limit (the source's `timeout`). */
  timeoutMs: number
}

interface CachedToken {
  accessToken: string
  /** ms epoch: from here on the token is not used any more (shortly before it expires). */
  refreshAt: number
}

/** The authenticator for a source's `authentication` (none: requests go out without credentials). */
export function createAuthenticator(
  auth: Authentication | undefined,
  ctx: ConnectorContext,
  options: AuthOptions,
): Authenticator {
  const secrets: string[] = []
  const keep = (...values: (string | undefined)[]) => {
    for (const v of values) if (v && !secrets.includes(v)) secrets.push(v)
  }
  if (!auth) return { apply: async () => {}, invalidate: async () => false, secrets }
  keep(auth.token, auth.password, auth.apiKey, auth.clientSecret)
  if (auth.type === 'bearer') return fixed(secrets, 'authorization', `Bearer ${auth.token}`)
  if (auth.type === 'api-key') return fixed(secrets, auth.apiKeyHeader ?? DEFAULT_API_KEY_HEADER, auth.apiKey ?? '')
  if (auth.type === 'basic') {
    const credentials = base64(`${auth.username}:${auth.password ?? ''}`)
    keep(credentials)
    return fixed(secrets, 'authorization', `Basic ${credentials}`)
  }
  return oauth2(auth, ctx, options, secrets, keep)
}

/** Base64 of the UTF-8 bytes of `s` (btoa alone only takes Latin-1). */
export function base64(s: string): string {
  let binary = ''
  for (const byte of new TextEncoder().encode(s)) binary += String.fromCharCode(byte)
  return btoa(binary)
}

// --- Internal helpers ---

function fixed(secrets: string[], header: string, value: string): Authenticator {
  return { apply: async (headers) => headers.set(header, value), invalidate: async () => false, secrets }
}

/**
 * OAuth2 client credentials (DATA-ENGINE: OAuth2). The token is kept in the source's cache until
 * shortly before `expires_in` runs out (checked against ctx.now() on every request, so a long
 * read refreshes it half-way); a token without `expires_in` is used for this sync only.
 */
function oauth2(
  auth: Authentication,
  ctx: ConnectorContext,
  options: AuthOptions,
  secrets: string[],
  keep: (...v: string[]) => void,
): Authenticator {
  let current: CachedToken | undefined
  let fetchedForThisRequest = false
  const cacheKey = cacheKeyOf(auth)

  async function token(): Promise<string> {
    const now = ctx.now().getTime()
    fetchedForThisRequest = false
    if (current && now < current.refreshAt) return current.accessToken
    const cached = await ctx.cache.get<CachedToken | null>(await cacheKey)
    if (cached && typeof cached.accessToken === 'string' && now < cached.refreshAt) {
      current = cached
      keep(cached.accessToken)
      return cached.accessToken
    }
    const issued = await requestToken(auth, ctx, options, secrets)
    keep(issued.accessToken)
    fetchedForThisRequest = true
    if (issued.expiresInMs === undefined) {
      current = { accessToken: issued.accessToken, refreshAt: Number.POSITIVE_INFINITY }
      return issued.accessToken
    }
    const margin = Math.min(MAX_REFRESH_MARGIN_MS, issued.expiresInMs / 10)
    current = { accessToken: issued.accessToken, refreshAt: now + issued.expiresInMs - margin }
    const ttlSeconds = Math.max(1, Math.ceil((current.refreshAt - now) / 1000))
    await ctx.cache.set(await cacheKey, current, ttlSeconds)
    return issued.accessToken
  }

  return {
    secrets,
    apply: async (headers) => headers.set('authorization', `Bearer ${await token()}`),
    async invalidate() {
      if (fetchedForThisRequest || !current) return false
      current = undefined
      await ctx.cache.set(await cacheKey, null, 1)
      return true
    },
  }
}

/** One cache entry per token endpoint, client, scope and secret (a rotated secret gets a new token). */
async function cacheKeyOf(auth: Authentication): Promise<string> {
  const material = JSON.stringify([auth.tokenUrl, auth.clientId, auth.scope ?? '', auth.clientSecret])
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(material)))
  return `oauth2-token:${Array.from(digest.slice(0, 16), (b) => b.toString(16).padStart(2, '0')).join('')}`
}

async function requestToken(
  auth: Authentication,
  ctx: ConnectorContext,
  options: AuthOptions,
  secrets: readonly string[],
): Promise<{ accessToken: string; expiresInMs?: number }> {
  const tokenUrl = auth.tokenUrl as string
  const form = new URLSearchParams({ grant_type: 'client_credentials' })
  if (auth.scope) form.set('scope', auth.scope)
  const headers = new Headers({ 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' })
  if (auth.tokenAuthMethod === 'client_secret_post') {
    form.set('client_id', auth.clientId as string)
    form.set('client_secret', auth.clientSecret as string)
  } else {
    headers.set('authorization', `Basic ${base64(`${auth.clientId}:${auth.clientSecret}`)}`)
  }
  const label = 'OAuth2 token endpoint'
  const doc = await withRetry(
    async () => {
      const request = requestSignal(ctx.signal, options.timeoutMs)
      try {
        let res: Response
        try {
          res = await ctx.fetch(tokenUrl, { method: 'POST', headers, body: form.toString(), signal: request.signal })
        } catch (err) {
          throw networkFailure(err, ctx, label, tokenUrl)
        }
        if (!res.ok) {
          const message = `${label} responded ${res.status}${res.statusText ? ` ${res.statusText}` : ''}${await errorExcerpt(res, secrets)}`
          if (RETRY_STATUSES.has(res.status)) throw new RetryableError(message, parseRetryAfter(res.headers.get('retry-after')))
          throw new ConnectorError(message)
        }
        const text = new TextDecoder().decode(await readBodyLimited(res, MAX_TOKEN_RESPONSE_BYTES, `${label} response`))
        try {
          return JSON.parse(text) as Record<string, unknown> | null
        } catch {
          throw new ConnectorError(`${label} answered something that is not JSON`)
        }
      } catch (err) {
        if (err instanceof RequestTimeout && !ctx.signal.aborted) {
          throw new ConnectorError(`${label} request timed out after ${err.timeoutMs} ms (the source's timeout)`)
        }
        throw err
      } finally {
        request.clear()
      }
    },
    { attempts: options.retryAttempts, delayMs: options.retryDelayMs, signal: ctx.signal },
  )
  const accessToken = doc?.access_token
  if (typeof accessToken !== 'string' || accessToken === '') throw new ConnectorError(`${label} answered no access_token`)
  const expiresIn = Number(doc?.expires_in)
  return { accessToken, expiresInMs: doc?.expires_in != null && expiresIn > 0 ? expiresIn * 1000 : undefined }
}
