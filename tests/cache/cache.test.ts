import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createServer } from 'node:net'
import { createStorage, type Storage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import redisDriver from 'unstorage/drivers/redis'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type Cache, createCache } from '../../src/cache/cache.ts'
import { makeTestApp, type TestApp, testClock } from '../helpers/app.ts'
import { clientFor } from '../helpers/http.ts'

/** The behaviour every storage driver must give the cache (unstorage's `testDriver` idea). */
function cacheContract(getStorage: () => Storage) {
  let clock: ReturnType<typeof testClock>
  let cache: Cache

  beforeEach(async () => {
    await getStorage().clear()
    clock = testClock()
    cache = createCache(getStorage(), { now: () => clock.now().getTime() })
  })

  it('returns undefined for a missing key', async () => {
    expect(await cache.get('tenant-a', 'nothing')).toBeUndefined()
  })

  it('stores and returns JSON values', async () => {
    await cache.set('tenant-a', 'panel:1', { id: 1, name: 'P', tags: ['x'], description: null })
    expect(await cache.get('tenant-a', 'panel:1')).toEqual({ id: 1, name: 'P', tags: ['x'], description: null })
  })

  it('keeps what was stored: later changes to the stored object do not reach the cache, and a read value cannot be changed', async () => {
    const panel = { id: 1, name: 'P', tags: ['x'], settings: { a: 1 } }
    await cache.set('tenant-a', 'panel:1', panel)
    panel.name = 'changed'
    panel.tags.push('y')
    const read = (await cache.get('tenant-a', 'panel:1')) as typeof panel
    expect(read).toEqual({ id: 1, name: 'P', tags: ['x'], settings: { a: 1 } })
    try {
      read.settings.a = 2
      read.tags.push('z')
    } catch {
      // A frozen value (memory driver) refuses the change; a parsed copy (other drivers) takes it.
    }
    expect(await cache.get('tenant-a', 'panel:1')).toEqual({ id: 1, name: 'P', tags: ['x'], settings: { a: 1 } })
  })

  it('expires entries by its own clock, whatever the driver does with ttl', async () => {
    await cache.set('tenant-a', 'k', 'v', 10)
    clock.advance(9_000)
    expect(await cache.get('tenant-a', 'k')).toBe('v')
    clock.advance(1_000)
    expect(await cache.get('tenant-a', 'k')).toBeUndefined()
    expect(await getStorage().getKeys()).toEqual([])
  })

  it('uses a default ttl of 3600 s', async () => {
    await cache.set('tenant-a', 'k', 'v')
    clock.advance(3_599_000)
    expect(await cache.get('tenant-a', 'k')).toBe('v')
    clock.advance(1_000)
    expect(await cache.get('tenant-a', 'k')).toBeUndefined()
  })

  it('honours a configured default ttl', async () => {
    const short = createCache(getStorage(), { defaultTtl: 5, now: () => clock.now().getTime() })
    await short.set('tenant-a', 'k', 'v')
    clock.advance(5_000)
    expect(await short.get('tenant-a', 'k')).toBeUndefined()
  })

  it('keeps tenants apart under the same key', async () => {
    await cache.set('tenant-a', 'panel:1', 'a')
    expect(await cache.get('tenant-b', 'panel:1')).toBeUndefined()
    await cache.set('tenant-b', 'panel:1', 'b')
    expect(await cache.get('tenant-a', 'panel:1')).toBe('a')
    expect(await cache.get('tenant-b', 'panel:1')).toBe('b')
    await cache.del('tenant-a', 'panel:1')
    expect(await cache.get('tenant-a', 'panel:1')).toBeUndefined()
    expect(await cache.get('tenant-b', 'panel:1')).toBe('b')
  })

  it('keeps tenants apart even when a tenant id contains the separator', async () => {
    await cache.set('a:panel', '1', 'evil')
    expect(await cache.get('a', 'panel:1')).toBeUndefined()
  })

  it('keeps keys apart that the driver would otherwise normalise together', async () => {
    await cache.set('tenant-a', 'views?panelId=1', 'one')
    await cache.set('tenant-a', 'views?panelId=2', 'two')
    await cache.set('tenant-a', 'a/b', 'slash')
    await cache.set('tenant-a', 'a%2Fb', 'literal')
    expect(await cache.get('tenant-a', 'views?panelId=1')).toBe('one')
    expect(await cache.get('tenant-a', 'views?panelId=2')).toBe('two')
    expect(await cache.get('tenant-a', 'views')).toBeUndefined()
    expect(await cache.get('tenant-a', 'a/b')).toBe('slash')
    expect(await cache.get('tenant-a', 'a:b')).toBeUndefined()
    expect(await cache.get('tenant-a', 'a%2Fb')).toBe('literal')
    await cache.del('tenant-a', 'views?panelId=1')
    expect(await cache.get('tenant-a', 'views?panelId=1')).toBeUndefined()
    expect(await cache.get('tenant-a', 'views?panelId=2')).toBe('two')
  })

  it('wrap loads once and then serves the cached value', async () => {
    let loads = 0
    const load = async () => ({ n: ++loads })
    expect(await cache.wrap('tenant-a', 'k', load)).toEqual({ n: 1 })
    expect(await cache.wrap('tenant-a', 'k', load)).toEqual({ n: 1 })
    expect(loads).toBe(1)
    clock.advance(3_600_000)
    expect(await cache.wrap('tenant-a', 'k', load)).toEqual({ n: 2 })
  })

  it('wrap does not cache undefined', async () => {
    let loads = 0
    const load = async () => {
      loads++
      return undefined
    }
    expect(await cache.wrap('tenant-a', 'k', load)).toBeUndefined()
    expect(await cache.wrap('tenant-a', 'k', load)).toBeUndefined()
    expect(loads).toBe(2)
  })

  it('del invalidates so the next wrap loads again', async () => {
    let version = 1
    const load = async () => `v${version}`
    expect(await cache.wrap('tenant-a', 'k', load)).toBe('v1')
    version = 2
    expect(await cache.wrap('tenant-a', 'k', load)).toBe('v1')
    await cache.del('tenant-a', 'k')
    expect(await cache.wrap('tenant-a', 'k', load)).toBe('v2')
  })

  it('does not store a value loaded before a del that happened during the load', async () => {
    let release!: (v: string) => void
    const slow = cache.wrap('tenant-a', 'k', () => new Promise<string>((r) => (release = r)))
    await new Promise((r) => setTimeout(r, 20))
    await cache.del('tenant-a', 'k')
    release('old')
    expect(await slow).toBe('old')
    expect(await cache.get('tenant-a', 'k')).toBeUndefined()
    expect(await cache.wrap('tenant-a', 'k', async () => 'new')).toBe('new')
    expect(await cache.get('tenant-a', 'k')).toBe('new')
  })

  it('ping round-trips through the driver and leaves nothing behind', async () => {
    await cache.ping()
    expect(await getStorage().getKeys()).toEqual([])
  })
}

describe('cache on the memory driver', () => {
  const storage = createStorage({ driver: memoryDriver() })
  cacheContract(() => storage)
})

// --- the same contract against a real Redis -----------------------------------------------------

function findOnPath(bin: string): string | undefined {
  try {
    return execFileSync('which', [bin], { encoding: 'utf8' }).trim() || undefined
  } catch {
    return undefined
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

async function waitForPing(port: number, proc: ChildProcess) {
  const { Redis } = await import('ioredis')
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited with code ${proc.exitCode}`)
    const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    client.on('error', () => {})
    try {
      await client.connect()
      if ((await client.ping()) === 'PONG') return
    } catch {
      await new Promise((r) => setTimeout(r, 50))
    } finally {
      client.disconnect()
    }
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 10 s`)
}

const redisServer = findOnPath('redis-server')
const noRedis = !redisServer

if (noRedis && process.env.CI) {
  describe('cache on a real Redis', () => {
    it('needs redis-server on PATH in CI', () => {
      throw new Error('redis-server is not installed: CI must install it (apt-get install -y redis-server)')
    })
  })
} else if (noRedis) {
  console.warn('cache.test.ts: redis-server is not on PATH; the real-Redis cache tests are skipped')
}

describe.skipIf(noRedis)('cache on a real Redis', () => {
  let proc: ChildProcess
  let storage: Storage
  let port: number

  beforeAll(async () => {
    port = await freePort()
    proc = spawn(redisServer!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    })
    await waitForPing(port, proc)
    storage = createStorage({ driver: redisDriver({ url: `redis://127.0.0.1:${port}` }) })
  })

  afterAll(async () => {
    await storage?.dispose()
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      await exited
    }
  })

  describe('contract', () => {
    cacheContract(() => storage)

    it('gives the driver a real ttl of at least 60 s as a backstop', async () => {
      const cache = createCache(storage)
      await cache.set('tenant-a', 'k', 'v', 5)
      const { Redis } = await import('ioredis')
      const client = new Redis({ port, host: '127.0.0.1' })
      try {
        const ttl = await client.ttl('t:tenant-a:k')
        expect(ttl).toBeGreaterThan(0)
        expect(ttl).toBeLessThanOrEqual(60)
      } finally {
        client.disconnect()
      }
    })
  })

  describe('GET /api/panels/{id} through the Redis cache', () => {
    let t: TestApp

    beforeEach(async () => {
      await storage.clear()
      t = await makeTestApp({ storage })
    })

    afterEach(async () => {
      await t.client.close()
    })

    it('serves a cached panel from Redis, never stale after a PUT, and never to another tenant', async () => {
      const alice = clientFor(t.app, 'tenant-a', 'alice')
      const { body: panel } = await alice.post('/api/panels', { name: 'Before', tenantId: 'tenant-a', userId: 'alice' })
      const first = await alice.get(`/api/panels/${panel.id}`)
      expect(first.status).toBe(200)
      const keys = (await storage.getKeys()).filter((k) => k.endsWith(`panel:${panel.id}`))
      expect(keys).toHaveLength(1)
      expect(keys[0]).toContain('tenant-a')
      expect(await storage.getItem(keys[0])).toMatchObject({ value: { id: panel.id, name: 'Before' } })

      const second = await alice.get(`/api/panels/${panel.id}`)
      expect(second.status).toBe(200)
      expect(second.body).toEqual(first.body)

      const put = await alice.put(`/api/panels/${panel.id}`, { name: 'After' })
      expect(put.status).toBe(200)
      expect((await alice.get(`/api/panels/${panel.id}`)).body.name).toBe('After')
      expect((await alice.get(`/api/panels/${panel.id}`)).body.name).toBe('After')

      const eve = clientFor(t.app, 'tenant-b', 'alice')
      const other = await eve.get(`/api/panels/${panel.id}`)
      expect(other.status).toBe(404)
      expect(JSON.stringify(other.body)).not.toContain('After')
    })

    it('reads the second GET from Redis rather than the database', async () => {
      const alice = clientFor(t.app, 'tenant-a', 'alice')
      const { body: panel } = await alice.post('/api/panels', { name: 'Real', tenantId: 'tenant-a', userId: 'alice' })
      await alice.get(`/api/panels/${panel.id}`)
      const [key] = (await storage.getKeys()).filter((k) => k.endsWith(`panel:${panel.id}`))
      const entry = (await storage.getItem(key)) as { value: Record<string, unknown>; expiresAt: number }
      await storage.setItem(key, { ...entry, value: { ...entry.value, name: 'From Redis' } })
      expect((await alice.get(`/api/panels/${panel.id}`)).body.name).toBe('From Redis')
    })

    it('does not serve a deleted panel from the cache', async () => {
      const alice = clientFor(t.app, 'tenant-a', 'alice')
      const { body: panel } = await alice.post('/api/panels', { name: 'Gone', tenantId: 'tenant-a', userId: 'alice' })
      expect((await alice.get(`/api/panels/${panel.id}`)).status).toBe(200)
      expect((await alice.delete(`/api/panels/${panel.id}`)).status).toBe(204)
      expect((await alice.get(`/api/panels/${panel.id}`)).status).toBe(404)
    })
  })
})
