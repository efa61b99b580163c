import type { Context, TypedResponse } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { InvalidJSONValue, JSONParsed, JSONValue } from 'hono/utils/types'

/**
 * Response headers are gathered per request in one plain record (`c.var.responseHeaders`: lower-case
 * names) before the handler runs: the security headers, X-Request-Id, CORS, RateLimit-*, paging.
 * `sendJson()` answers with that record as the response's headers, which @hono/node-server writes with
 * one `writeHead` — no `Headers` object, no header copying after the handler (docs/performance.md).
 * Any other response (errors, docs, exports, 204s) gets the record applied after the handler by
 * `applyResponseHeaders`, so every response carries the same headers either way.
 */
export type HeaderRecord = Record<string, string>

/**
 * What hono/secure-headers sends with `crossOriginResourcePolicy: 'cross-origin'` (the API is
 * called from other origins). tests/http/response-headers.test.ts keeps the two identical.
 */
export const SECURITY_HEADERS: Readonly<HeaderRecord> = Object.freeze({
  'cross-origin-resource-policy': 'cross-origin',
  'cross-origin-opener-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=15552000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
})

/** Responses built by `sendJson()` already carry the request's headers. */
const prepared = new WeakSet<Response>()

/** Adds a header to the response being prepared (lower-case name). */
export function setResponseHeader(c: Context, name: string, value: string) {
  ;(c.get('responseHeaders') as HeaderRecord)[name.toLowerCase()] = value
}

/**
 * A JSON answer carrying the request's prepared headers, typed like `c.json` for the routes.
 * `mediaType` names a JSON flavour (the /fhir face answers `application/fhir+json`).
 */
export function sendJson<T extends JSONValue | object | InvalidJSONValue, U extends ContentfulStatusCode>(
  c: Context,
  body: T,
  status: U,
  mediaType = 'application/json',
): Response & TypedResponse<JSONParsed<T>, U, 'json'> {
  const headers = c.get('responseHeaders') as HeaderRecord
  headers['content-type'] = mediaType
  const res = new Response(JSON.stringify(body), { status, headers })
  prepared.add(res)
  return res as Response & TypedResponse<JSONParsed<T>, U, 'json'>
}

/** Puts the prepared headers on a response `sendJson()` did not build (`Vary` is appended, not replaced). */
export function applyResponseHeaders(c: Context, headers: HeaderRecord) {
  const res = c.res
  if (prepared.has(res)) return
  const target = res.headers
  for (const name in headers) {
    if (name === 'content-type') continue
    if (name === 'vary') target.append(name, headers[name])
    else target.set(name, headers[name])
  }
  target.delete('x-powered-by')
}
