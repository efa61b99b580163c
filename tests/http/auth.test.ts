import { sign } from 'hono/jwt'
import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, TEST_SECRET, type TestApp } from '../helpers/app.ts'
import { noneToken, signRaw } from '../helpers/auth.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { onTarget, SKIP } from '../helpers/target.ts'

let t: TestApp
let alice: TestClient

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
})

const LIST = '/api/panels?tenantId=tenant-a&userId=alice'
const nowSeconds = () => Math.floor(t.clock.now().getTime() / 1000)
const claims = (extra: Record<string, unknown> = {}) => ({
  tenantId: 'tenant-a',
  userId: 'alice',
  exp: nowSeconds() + 3600,
  ...extra,
})

/** A raw request with an arbitrary Authorization header (or none). */
async function call(method: string, path: string, authorization?: string, body?: unknown) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' }
  if (authorization !== undefined) headers.Authorization = authorization
  const res = await t.app.request(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null }
}

const bearer = (token: string) => `Bearer ${token}`
const panelBody = { name: 'P', tenantId: 'tenant-a', userId: 'alice' }

function expect401(res: { status: number; headers: Headers; body: any }, code: string) {
  expect(res.status).toBe(401)
  expect(res.body).toMatchObject({ error: 'Unauthorized', statusCode: 401, code })
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
}

describe('GET /api/panels authentication', () => {
  it('answers 401 UNAUTHORIZED without an Authorization header', async () => {
    expect401(await call('GET', LIST), 'UNAUTHORIZED')
  })

  it('answers 401 UNAUTHORIZED for a non-Bearer scheme', async () => {
    expect401(await call('GET', LIST, `Basic ${btoa('alice:secret')}`), 'UNAUTHORIZED')
    expect401(await call('GET', LIST, 'Bearer'), 'UNAUTHORIZED')
  })

  it('answers 401 TOKEN_INVALID for a malformed token', async () => {
    expect401(await call('GET', LIST, bearer('not-a-jwt')), 'TOKEN_INVALID')
    expect401(await call('GET', LIST, bearer('a.b.c')), 'TOKEN_INVALID')
  })

  it('answers 401 TOKEN_EXPIRED for a token whose exp has passed', async () => {
    const token = await signRaw(claims({ exp: nowSeconds() - 60 }))
    expect401(await call('GET', LIST, bearer(token)), 'TOKEN_EXPIRED')
  })

  it('answers 401 TOKEN_INVALID for a token signed with another secret', async () => {
    const token = await signRaw(claims(), 'another-secret-that-is-long-enough-0123456789')
    expect401(await call('GET', LIST, bearer(token)), 'TOKEN_INVALID')
  })

  it('answers 401 TOKEN_INVALID for an alg none token', async () => {
    expect401(await call('GET', LIST, bearer(noneToken(claims()))), 'TOKEN_INVALID')
  })

  it('answers 401 TOKEN_INVALID for HS512 and HS384 tokens even with the right secret', async () => {
    for (const alg of ['HS512', 'HS384'] as const) {
      const token = await sign(claims(), TEST_SECRET, alg)
      expect401(await call('GET', LIST, bearer(token)), 'TOKEN_INVALID')
    }
  })

  it('answers 401 TOKEN_INVALID for a token without exp', async () => {
    const { exp: _exp, ...noExp } = claims()
    expect401(await call('GET', LIST, bearer(await signRaw(noExp))), 'TOKEN_INVALID')
  })

  it('answers 401 TOKEN_INVALID for a token without tenantId', async () => {
    const { tenantId: _tenant, ...noTenant } = claims()
    expect401(await call('GET', LIST, bearer(await signRaw(noTenant))), 'TOKEN_INVALID')
  })

  it('answers 401 TOKEN_INVALID for a token without userId or sub', async () => {
    const { userId: _user, ...noUser } = claims()
    expect401(await call('GET', LIST, bearer(await signRaw(noUser))), 'TOKEN_INVALID')
  })

  it('refuses a cached token once its exp passes', async () => {
    const token = await signRaw(claims({ exp: nowSeconds() + 60 }))
    expect((await call('GET', LIST, bearer(token))).status).toBe(200)
    expect((await call('GET', LIST, bearer(token))).status).toBe(200)
    t.clock.advance(61_000)
    expect401(await call('GET', LIST, bearer(token)), 'TOKEN_EXPIRED')
    expect401(await call('GET', LIST, bearer(token)), 'TOKEN_EXPIRED')
  })

  it('accepts sub in place of userId', async () => {
    const { userId: _user, ...rest } = claims()
    const token = await signRaw({ ...rest, sub: 'alice' })
    const res = await call('GET', LIST, bearer(token))
    expect(res.status).toBe(200)
    expect(res.body).toEqual([])
    const created = await call('POST', '/api/panels', bearer(token), panelBody)
    expect(created.status).toBe(201)
    expect(created.body.userId).toBe('alice')
  })

  it('accepts a token signed by the test helper', async () => {
    const res = await alice.get(LIST)
    expect(res.status).toBe(200)
  })
})

describe('POST /api/panels authentication', () => {
  it('answers 401 without a token, before validating the body', async () => {
    expect401(await call('POST', '/api/panels', undefined, {}), 'UNAUTHORIZED')
  })

  it('answers 401 TOKEN_EXPIRED for an expired token', async () => {
    const token = await signRaw(claims({ exp: nowSeconds() - 1 }))
    expect401(await call('POST', '/api/panels', bearer(token), panelBody), 'TOKEN_EXPIRED')
  })

  it('answers 401 for a tampered payload', async () => {
    const token = await signRaw(claims())
    const [h, , s] = token.split('.')
    const forged = Buffer.from(JSON.stringify(claims({ tenantId: 'tenant-b' }))).toString('base64url')
    expect401(await call('POST', '/api/panels', bearer(`${h}.${forged}.${s}`), panelBody), 'TOKEN_INVALID')
  })
})

describe('tenant guard', () => {
  it('answers 403 Access denied to tenant for a tenantId mismatch in the query', async () => {
    const res = await alice.get('/api/panels?tenantId=tenant-b&userId=alice')
    expect(res.status).toBe(403)
    expect(res.body).toMatchObject({ error: 'Access denied to tenant', statusCode: 403, code: 'TENANT_ACCESS_DENIED' })
  })

  it('answers 403 Access denied to tenant for a tenantId mismatch in the body', async () => {
    const res = await alice.post('/api/panels', { ...panelBody, tenantId: 'tenant-b' })
    expect(res.status).toBe(403)
    expect(res.body).toMatchObject({ error: 'Access denied to tenant', code: 'TENANT_ACCESS_DENIED' })
  })

  it('answers 403 Access denied to user for a userId mismatch', async () => {
    const list = await alice.get('/api/panels?tenantId=tenant-a&userId=bob')
    expect(list.status).toBe(403)
    expect(list.body).toMatchObject({ error: 'Access denied to user', statusCode: 403, code: 'USER_ACCESS_DENIED' })
    const create = await alice.post('/api/panels', { ...panelBody, userId: 'bob' })
    expect(create.status).toBe(403)
    expect(create.body.error).toBe('Access denied to user')
  })

  it('lets an admin act for another user of its tenant', async () => {
    const admin = clientFor(t.app, 'tenant-a', 'root', { role: 'admin' })
    const res = await admin.post('/api/panels', { ...panelBody, userId: 'bob' })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ tenantId: 'tenant-a', userId: 'bob' })
    const bob = clientFor(t.app, 'tenant-a', 'bob')
    const list = await bob.get('/api/panels?tenantId=tenant-a&userId=bob')
    expect(list.body.map((p: { id: number }) => p.id)).toEqual([res.body.id])
    const other = await admin.get('/api/panels?tenantId=tenant-a&userId=bob')
    expect(other.status).toBe(200)
    expect(other.body).toHaveLength(1)
  })

  it('does not let an admin act for another tenant', async () => {
    const admin = clientFor(t.app, 'tenant-a', 'root', { role: 'admin' })
    const res = await admin.post('/api/panels', { ...panelBody, tenantId: 'tenant-b', userId: 'bob' })
    expect(res.status).toBe(403)
    expect(res.body.code).toBe('TENANT_ACCESS_DENIED')
    const list = await admin.get('/api/panels?tenantId=tenant-b&userId=bob')
    expect(list.status).toBe(403)
  })

  it("answers 404 for another tenant's panel even when the ids match", async () => {
    const { body: panel } = await alice.post('/api/panels', panelBody)
    const eve = clientFor(t.app, 'tenant-b', 'alice')
    const res = await eve.get(`/api/panels/${panel.id}`)
    expect(res.status).toBe(404)
    expect(JSON.stringify(res.body)).not.toContain('tenant-a')
  })
})

describe('order of checks', () => {
  it('answers 401 before 400: no token and an invalid body', async () => {
    expect((await call('POST', '/api/panels', undefined, { name: '' })).status).toBe(401)
  })

  it.skipIf(onTarget('workers', SKIP.earlyAnswer))(
    'answers 401 before reading the body: malformed JSON, another media type, an oversized body',
    async () => {
      const bodies: [string, string][] = [
        ['application/json', '{"name": '],
        ['text/plain', 'hello'],
        ['application/json', 'x'.repeat(1024 * 1024 + 1)],
      ]
      for (const [type, body] of bodies) {
        const res = await t.app.request('/api/panels', { method: 'POST', headers: { 'Content-Type': type }, body })
        expect(res.status).toBe(401)
        expect((await res.json()).code).toBe('UNAUTHORIZED')
      }
    },
  )

  it('answers 400 before 403: an invalid body with a wrong tenant', async () => {
    const res = await alice.post('/api/panels', { name: '', tenantId: 'tenant-b', userId: 'alice' })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
  })

  it('answers 403 for a valid body with a wrong tenant', async () => {
    expect((await alice.post('/api/panels', { ...panelBody, tenantId: 'tenant-b' })).status).toBe(403)
  })

  it('answers 403 before 404: a wrong tenant on a missing panel', async () => {
    const res = await alice.get('/api/panels/999?tenantId=tenant-b')
    expect(res.status).toBe(403)
    expect(res.body.code).toBe('TENANT_ACCESS_DENIED')
  })

  it('answers 404 for the right tenant and a missing panel', async () => {
    const res = await alice.get('/api/panels/999?tenantId=tenant-a')
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ error: 'Panel not found', code: 'NOT_FOUND' })
  })
})

describe('public routes', () => {
  it('serves /health without a token', async () => {
    const res = await t.app.request('/health')
    expect(res.status).toBe(200)
  })

  it('serves /docs and /openapi.json without a token', async () => {
    expect((await t.app.request('/docs')).status).toBe(200)
    const doc = await t.app.request('/openapi.json')
    expect(doc.status).toBe(200)
    expect((await doc.json()).info.title).toBe('Panels API')
  })

  it('answers a CORS preflight of /api/panels without a token', async () => {
    const res = await t.app.request('/api/panels', {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://app.example.com',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type',
      },
    })
    expect(res.status).toBeLessThan(300)
    expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization')
    expect(res.headers.get('access-control-allow-origin')).toBeTruthy()
  })
})

describe('CORS', () => {
  it('allows any origin in development and exposes X-Request-Id and the RateLimit headers', async () => {
    const res = await t.app.request(LIST, {
      headers: { Authorization: bearer(await signRaw(claims())), Origin: 'https://app.example.com' },
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const exposed = res.headers.get('access-control-expose-headers')?.toLowerCase() ?? ''
    for (const h of ['x-request-id', 'ratelimit-remaining', 'retry-after']) expect(exposed).toContain(h)
  })

  it('answers only the configured origins when CORS_ORIGINS is set', async () => {
    t = await makeTestApp({ env: { CORS_ORIGINS: 'https://good.example, https://other.example' } })
    const preflight = (origin: string) =>
      t.app.request('/api/panels', {
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization' },
      })
    expect((await preflight('https://good.example')).headers.get('access-control-allow-origin')).toBe('https://good.example')
    expect((await preflight('https://evil.example')).headers.get('access-control-allow-origin')).toBeNull()
    const token = bearer(await signRaw(claims()))
    const good = await t.app.request(LIST, { headers: { Authorization: token, Origin: 'https://other.example' } })
    expect(good.headers.get('access-control-allow-origin')).toBe('https://other.example')
    const evil = await t.app.request(LIST, { headers: { Authorization: token, Origin: 'https://evil.example' } })
    expect(evil.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('AUTH_DISABLED', () => {
  beforeEach(async () => {
    t = await makeTestApp({ env: { AUTH_DISABLED: 'true' } })
  })

  it('takes tenant and user from the request without a token', async () => {
    const created = await call('POST', '/api/panels', undefined, { name: 'Dev', tenantId: 'tenant-x', userId: 'carol' })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ tenantId: 'tenant-x', userId: 'carol' })
    const list = await call('GET', '/api/panels?tenantId=tenant-x&userId=carol')
    expect(list.status).toBe(200)
    expect(list.body).toHaveLength(1)
    const one = await call('GET', `/api/panels/${created.body.id}?tenantId=tenant-x&userId=carol`)
    expect(one.status).toBe(200)
  })

  it('falls back to DEV_TENANT_ID and DEV_USER_ID when the request names none', async () => {
    const created = await call('POST', '/api/panels', undefined, { name: 'Dev', tenantId: 'dev-tenant', userId: 'dev-user' })
    expect(created.status).toBe(201)
    expect((await call('GET', `/api/panels/${created.body.id}`)).status).toBe(200)
    const other = await call('POST', '/api/panels', undefined, { name: 'X', tenantId: 'tenant-x', userId: 'carol' })
    expect((await call('GET', `/api/panels/${other.body.id}`)).status).toBe(404)
  })

  it('uses configured DEV_TENANT_ID and DEV_USER_ID', async () => {
    t = await makeTestApp({ env: { AUTH_DISABLED: 'true', DEV_TENANT_ID: 'local', DEV_USER_ID: 'me' } })
    const created = await call('POST', '/api/panels', undefined, { name: 'Dev', tenantId: 'local', userId: 'me' })
    const one = await call('GET', `/api/panels/${created.body.id}`)
    expect(one.status).toBe(200)
    expect(one.body).toMatchObject({ tenantId: 'local', userId: 'me' })
  })

  it('ignores an Authorization header that would otherwise be refused', async () => {
    const res = await call('GET', '/api/panels?tenantId=t&userId=u', 'Bearer garbage')
    expect(res.status).toBe(200)
  })
})
