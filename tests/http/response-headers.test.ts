import { Hono } from 'hono'
import { secureHeaders } from 'hono/secure-headers'
import { beforeEach, describe, expect, it } from 'vitest'
import { SECURITY_HEADERS } from '../../src/http/response-headers.ts'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { authHeaders } from '../helpers/auth.ts'

let t: TestApp

beforeEach(async () => {
  t = await makeTestApp({ env: { CORS_ORIGINS: 'https://app.example', RATE_LIMIT_ENABLED: 'true' } })
})

/**
 * Every header of a response except the ones that differ per request or per body: the body's
 * framing among them (`content-length`, or `transfer-encoding: chunked` where the runtime streams a
 * body of unknown length, as workerd does; a 204 has neither).
 */
function stableHeaders(res: Response) {
  const out: Record<string, string> = {}
  const varying = [
    'x-request-id',
    'content-length',
    'transfer-encoding',
    'content-type',
    'ratelimit-reset',
    'ratelimit-remaining',
  ]
  for (const [k, v] of res.headers) {
    if (!varying.includes(k)) out[k] = v
  }
  return out
}

describe('prepared response headers', () => {
  it('are the headers hono/secure-headers sends with cross-origin resources', async () => {
    const app = new Hono()
    app.use('*', secureHeaders({ crossOriginResourcePolicy: 'cross-origin' }))
    app.get('/', (c) => c.text('ok'))
    const expected = Object.fromEntries([...(await app.request('/')).headers].filter(([k]) => k !== 'content-type'))
    expect(SECURITY_HEADERS).toEqual(expected)
  })

  it('are the same on a JSON answer, an error, a 204 and the OpenAPI document', async () => {
    const headers = { ...(await authHeaders('tenant-a', 'alice')), origin: 'https://app.example' }
    const created = await t.app.request('/api/panels', {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'P', tenantId: 'tenant-a', userId: 'alice' }),
    })
    expect(created.status).toBe(201)
    const { id } = (await created.json()) as { id: number }
    const ok = await t.app.request(`/api/panels/${id}`, { headers })
    const missing = await t.app.request('/api/panels/999999', { headers })
    const deleted = await t.app.request(`/api/panels/${id}`, { method: 'DELETE', headers })
    const doc = await t.app.request('/openapi.json', { headers: { origin: 'https://app.example' } })
    expect([ok.status, missing.status, deleted.status, doc.status]).toEqual([200, 404, 204, 200])

    const expected = stableHeaders(ok)
    expect(expected).toMatchObject({
      ...SECURITY_HEADERS,
      'access-control-allow-origin': 'https://app.example',
      vary: 'Origin',
      'ratelimit-limit': expect.any(String),
    })
    expect(stableHeaders(missing)).toEqual(expected)
    expect(stableHeaders(deleted)).toEqual(expected)
    // Outside /api: no rate limit, the rest is the same.
    const { 'ratelimit-limit': _l, 'ratelimit-policy': _p, ...rest } = expected
    expect(stableHeaders(doc)).toEqual(rest)
    for (const res of [ok, missing, deleted, doc]) expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect(ok.headers.get('content-type')).toBe('application/json')
  })

  it('keep per-request values apart: ids and rate limits are never shared between requests', async () => {
    const headers = await authHeaders('tenant-a', 'alice')
    const a = await t.app.request('/api/panels?tenantId=tenant-a&userId=alice', { headers })
    const b = await t.app.request('/api/panels?tenantId=tenant-a&userId=alice', { headers })
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'))
    expect(Number(b.headers.get('ratelimit-remaining'))).toBe(Number(a.headers.get('ratelimit-remaining')) - 1)
  })
})
