import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { onTarget, SKIP } from '../helpers/target.ts'

let t: TestApp
let alice: TestClient
let bob: TestClient

beforeEach(async () => {
  t = await makeTestApp({ env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PANELS: '3/60', RATE_LIMIT_SYNCS: '2/60' } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-b', 'bob')
})

const list = (c: TestClient, ip = '10.0.0.1') =>
  c.get(`/api/panels?tenantId=${c.tenantId}&userId=${c.userId}`, { 'X-Forwarded-For': ip })

async function exhaust(c: TestClient, ip = '10.0.0.1') {
  for (let i = 0; i < 3; i++) expect((await list(c, ip)).status).toBe(200)
}

describe('GET /api/panels rate limit', () => {
  it('sends RateLimit headers counting down on allowed requests', async () => {
    const remaining: (string | null)[] = []
    for (let i = 0; i < 3; i++) {
      const res = await list(alice)
      expect(res.headers.get('ratelimit-limit')).toBe('3')
      expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0)
      remaining.push(res.headers.get('ratelimit-remaining'))
    }
    expect(remaining).toEqual(['2', '1', '0'])
  })

  it('answers the 4th request with 429 RATE_LIMITED, Retry-After and RateLimit headers', async () => {
    await exhaust(alice)
    const res = await list(alice)
    expect(res.status).toBe(429)
    expect(res.body).toMatchObject({ error: 'Too Many Requests', statusCode: 429, code: 'RATE_LIMITED' })
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60)
    expect(res.headers.get('ratelimit-limit')).toBe('3')
    expect(res.headers.get('ratelimit-remaining')).toBe('0')
    expect(res.headers.get('ratelimit-reset')).toBe(res.headers.get('retry-after'))
  })

  it.skipIf(onTarget('workers', SKIP.cfIp))('counts another tenant on another IP separately', async () => {
    await exhaust(alice, '10.0.0.1')
    expect((await list(alice, '10.0.0.1')).status).toBe(429)
    const res = await list(bob, '10.0.0.2')
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit-remaining')).toBe('2')
  })

  it('does not let a tenant escape its limit by changing IP', async () => {
    await exhaust(alice, '10.0.0.1')
    expect((await list(alice, '10.0.0.9')).status).toBe(429)
  })

  it.skipIf(onTarget('workers', SKIP.cfIp))('also limits one IP across tenants', async () => {
    await exhaust(alice, '10.0.0.1')
    expect((await list(bob, '10.0.0.1')).status).toBe(429)
    expect((await list(bob, '10.0.0.2')).status).toBe(200)
  })

  it('counts refused requests of a tenant (404s) against its limit', async () => {
    for (let i = 0; i < 3; i++) expect((await alice.get('/api/panels/999', { 'X-Forwarded-For': '10.0.0.1' })).status).toBe(404)
    expect((await list(alice)).status).toBe(429)
  })

  it('refuses a client past its limit before reading its body', async () => {
    await exhaust(alice)
    const res = await alice.post('/api/panels', '{"not json', { 'X-Forwarded-For': '10.0.0.1' })
    expect(res.status).toBe(429)
  })

  it('resets the window after the clock advances', async () => {
    await exhaust(alice)
    expect((await list(alice)).status).toBe(429)
    t.clock.advance(30_000)
    expect((await list(alice)).status).toBe(429)
    t.clock.advance(31_000)
    const res = await list(alice)
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit-remaining')).toBe('2')
  })

  it('does not count CORS preflights', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await t.app.request('/api/panels', {
        method: 'OPTIONS',
        headers: { Origin: 'https://app.example.com', 'Access-Control-Request-Method': 'GET', 'X-Forwarded-For': '10.0.0.1' },
      })
      expect(res.status).toBeLessThan(300)
    }
    await exhaust(alice)
  })
})

describe('POST /api/datasources/{id}/sync rate limit', () => {
  it('uses a syncs bucket separate from the panels bucket', async () => {
    await exhaust(alice)
    expect((await list(alice)).status).toBe(429)
    const first = await alice.post('/api/datasources/1/sync', undefined, { 'X-Forwarded-For': '10.0.0.1' })
    expect(first.status).not.toBe(429)
    expect(first.headers.get('ratelimit-limit')).toBe('2')
    expect(first.headers.get('ratelimit-remaining')).toBe('1')
    expect((await alice.post('/api/datasources/1/sync', undefined, { 'X-Forwarded-For': '10.0.0.1' })).status).not.toBe(429)
    const third = await alice.post('/api/datasources/1/sync', undefined, { 'X-Forwarded-For': '10.0.0.1' })
    expect(third.status).toBe(429)
    expect(third.body.code).toBe('RATE_LIMITED')
  })
})

describe('rate limiting switched off', () => {
  it('never answers 429 and sends no RateLimit headers', async () => {
    t = await makeTestApp({ env: { RATE_LIMIT_ENABLED: 'false', RATE_LIMIT_PANELS: '3/60' } })
    alice = clientFor(t.app, 'tenant-a', 'alice')
    for (let i = 0; i < 6; i++) {
      const res = await list(alice)
      expect(res.status).toBe(200)
      expect(res.headers.get('ratelimit-limit')).toBeNull()
    }
  })
})
