import { createStorage, defineDriver } from 'unstorage'
import { describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'

const broken = defineDriver(() => ({
  name: 'broken',
  hasItem: () => Promise.reject(new Error('ECONNREFUSED 10.0.0.5:6379')),
  getItem: () => Promise.reject(new Error('ECONNREFUSED 10.0.0.5:6379')),
  setItem: () => Promise.reject(new Error('ECONNREFUSED 10.0.0.5:6379')),
  removeItem: () => Promise.reject(new Error('ECONNREFUSED 10.0.0.5:6379')),
  getKeys: () => Promise.resolve([]),
}))

const hung = defineDriver(() => ({
  name: 'hung',
  hasItem: () => new Promise<boolean>(() => {}),
  getItem: () => new Promise<null>(() => {}),
  setItem: () => new Promise<void>(() => {}),
  removeItem: () => new Promise<void>(() => {}),
  getKeys: () => Promise.resolve([]),
}))

const getJson = async (app: Awaited<ReturnType<typeof makeTestApp>>['app'], path = '/health') => {
  const res = await app.request(path)
  return { status: res.status, headers: res.headers, body: await res.json() }
}

describe('GET /health', () => {
  it.skipIf(onTarget(['workers', 'deno'], SKIP.cacheDriver))(
    'answers healthy with the database and cache checks, without a token',
    async () => {
      const t = await makeTestApp()
      t.clock.advance(90_500)
      const res = await getJson(t.app)
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(res.body).toEqual({
        status: 'healthy',
        timestamp: '2026-01-01T12:01:30.500Z',
        uptime: 90.5,
        database: { status: 'up', latencyMs: expect.any(Number) },
        redis: { status: 'not_configured', driver: 'memory' },
      })
      expect(res.body.database.latencyMs).toBeGreaterThanOrEqual(0)
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.cacheDriver))('answers the same report on /healthz and /liveness', async () => {
    const t = await makeTestApp()
    for (const path of ['/healthz', '/liveness']) {
      const res = await getJson(t.app, path)
      expect(res.status, path).toBe(200)
      expect(res.body).toMatchObject({ status: 'healthy', database: { status: 'up' }, redis: { driver: 'memory' } })
    }
  })

  it.skipIf(onTarget(['workers', 'deno'], SKIP.cacheDriver))(
    'reports redis up when a configured cache driver answers',
    async () => {
      const t = await makeTestApp()
      t.deps.config.cacheDriver = 'redis'
      const res = await getJson(t.app)
      expect(res.body.redis).toEqual({ status: 'up', driver: 'redis' })
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'answers 200 degraded with redis down when the cache fails, revealing no error text',
    async () => {
      const t = await makeTestApp({ storage: createStorage({ driver: broken({}) }) })
      const res = await getJson(t.app)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({
        status: 'degraded',
        database: { status: 'up' },
        redis: { status: 'down', driver: 'memory' },
      })
      expect(JSON.stringify(res.body)).not.toContain('ECONNREFUSED')
      expect(t.logs).toContainEqual(expect.objectContaining({ msg: 'health check failed', check: 'cache' }))
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'answers 503 unhealthy with database down when the database fails',
    async () => {
      const t = await makeTestApp()
      t.client.close()
      const res = await getJson(t.app)
      expect(res.status).toBe(503)
      expect(res.body).toMatchObject({
        status: 'unhealthy',
        database: { status: 'down', latencyMs: expect.any(Number) },
        redis: { status: 'not_configured', driver: 'memory' },
      })
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'bounds a hung cache check by the timeout instead of hanging',
    async () => {
      const t = await makeTestApp({ storage: createStorage({ driver: hung({}) }) })
      const started = Date.now()
      const res = await getJson(t.app)
      expect(Date.now() - started).toBeLessThan(4000)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ status: 'degraded', database: { status: 'up' }, redis: { status: 'down' } })
    },
    10_000,
  )
})
