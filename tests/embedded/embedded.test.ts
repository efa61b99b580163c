import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, openPanelService, type PanelService, parseConfig } from '../../src/index.ts'
import { bearer, smokeSuite } from '../runtime/smoke.ts'

// A host application that embeds the service the way docs/embedding.md shows: the package entry's
// openPanelService (a real libSQL file, migrated) and `host.route('/panels-api', …)`. The packed
// package in a host of its own is tests/runtime/library.test.ts.
const SECRET = 'embedded-host-secret-that-is-long-enough-0123'

async function hostWith(dir: string, env: Record<string, string> = {}) {
  const service = await openPanelService({
    NODE_ENV: 'test',
    JWT_SECRET: SECRET,
    ENCRYPTION_KEY: 'embedded-encryption-key',
    DATABASE_URL: `file:${join(dir, 'panels.db')}`,
    FILES_DIR: join(dir, 'files'),
    LOG_LEVEL: 'silent',
    ...env,
  })
  const host = new Hono()
  host.get('/', (c) => c.text('host home'))
  host.route('/panels-api', service.app)
  return { host, service }
}

let dir: string
const opened: PanelService[] = []

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'embedded-'))
})

afterAll(async () => {
  for (const service of opened) await service.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('embedded under /panels-api in a host app served over HTTP', () => {
  let server: ReturnType<typeof serve> | undefined
  let base = ''

  beforeAll(async () => {
    const { host, service } = await hostWith(join(dir, 'multi'))
    opened.push(service)
    server = serve({ fetch: host.fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise<void>((resolve) => server!.once('listening', () => resolve()))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/panels-api`
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  })

  smokeSuite(() => ({ base, secret: SECRET }))

  it('keeps the host routes and points the docs page and the document at the mount path', async () => {
    expect(await (await fetch(base.replace('/panels-api', '/'))).text()).toBe('host home')
    expect(await (await fetch(`${base}/docs`)).text()).toContain("url: './openapi.json'")
    const doc = await (await fetch(`${base}/openapi.json`)).json()
    expect(doc.servers).toEqual([{ url: '/panels-api' }])
    expect((await (await fetch(`${base}/docs/json`)).json()).servers).toEqual([{ url: '/panels-api' }])
  })

  it('tests middleware paths relative to the mount: webhooks skip the token check', async () => {
    const res = await fetch(`${base}/api/webhooks/unknown`, { method: 'POST', body: 'raw' })
    expect(res.status).toBe(404)
    expect((await fetch(`${base}/api/panels`, { method: 'POST', body: 'raw' })).status).toBe(401)
  })
})

describe('single-tenant mode (SINGLE_TENANT_ID)', () => {
  let host: Hono
  const call = async (path: string, init: RequestInit = {}) => {
    const res = await host.request(`/panels-api${path}`, init)
    return { status: res.status, body: await res.json() }
  }

  beforeAll(async () => {
    const built = await hostWith(join(dir, 'single'), { SINGLE_TENANT_ID: 'clinic-7' })
    opened.push(built.service)
    host = built.host
  })

  it('serves requests of that tenant, with or without naming it where naming is optional', async () => {
    const headers = await bearer(SECRET, 'clinic-7', 'nurse')
    const body = JSON.stringify({ name: 'Ward 3', tenantId: 'clinic-7', userId: 'nurse' })
    const created = await call('/api/panels', { method: 'POST', headers, body })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ tenantId: 'clinic-7', userId: 'nurse' })
    const listed = await call('/api/panels?tenantId=clinic-7&userId=nurse', { headers })
    expect(listed.body.map((p: { name: string }) => p.name)).toEqual(['Ward 3'])
    const changes = await call('/api/changes/panels', { headers })
    expect(changes.status).toBe(200)
    expect(changes.body.changes.map((c: { tenantId: string }) => c.tenantId)).toEqual(['clinic-7'])
  })

  it('refuses a request naming another tenant with 403', async () => {
    const headers = await bearer(SECRET, 'clinic-7', 'nurse')
    const res = await call('/api/panels?tenantId=clinic-8&userId=nurse', { headers })
    expect(res.status).toBe(403)
    expect(res.body).toMatchObject({ error: 'Access denied to tenant', code: 'TENANT_ACCESS_DENIED' })
    const body = JSON.stringify({ name: 'x', tenantId: 'clinic-8', userId: 'nurse' })
    expect((await call('/api/panels', { method: 'POST', headers, body })).status).toBe(403)
  })

  it("refuses another tenant's token with 403, even when it names no tenant", async () => {
    const headers = await bearer(SECRET, 'clinic-8', 'intruder')
    for (const path of ['/api/changes/panels', '/api/panels?tenantId=clinic-8&userId=intruder', '/api/panels/1']) {
      const res = await call(path, { headers })
      expect(res.status, path).toBe(403)
      expect(res.body.error).toBe('Access denied to tenant')
    }
  })

  it('still answers 401 without a token', async () => {
    expect((await call('/api/panels')).status).toBe(401)
  })

  it('uses the single tenant as the development tenant, and refuses a conflicting DEV_TENANT_ID', () => {
    expect(parseConfig({ SINGLE_TENANT_ID: 'clinic-7' }).devTenantId).toBe('clinic-7')
    expect(() => parseConfig({ SINGLE_TENANT_ID: 'clinic-7', DEV_TENANT_ID: 'other' })).toThrow(/DEV_TENANT_ID/)
  })
})

describe('rate limits under a mount path', () => {
  it('counts view and sync requests in their own buckets, as at the root', async () => {
    const { host, service } = await hostWith(join(dir, 'limits'), {
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_PANELS: '100/900',
      RATE_LIMIT_VIEWS: '7/900',
      RATE_LIMIT_SYNCS: '3/60',
    })
    opened.push(service)
    const headers = await bearer(SECRET, 'tenant-rl', 'user-rl')
    const views = await host.request('/panels-api/api/views', { headers })
    expect(views.status).toBe(200)
    expect(views.headers.get('RateLimit-Limit')).toBe('7')
    const sync = await host.request('/panels-api/api/datasources/1/sync', { method: 'POST', headers })
    expect(sync.headers.get('RateLimit-Limit')).toBe('3')
    const panels = await host.request('/panels-api/api/panels?tenantId=tenant-rl&userId=user-rl', { headers })
    expect(panels.headers.get('RateLimit-Limit')).toBe('100')
  })
})

describe('openPanelService', () => {
  it('refuses to open without JWT_SECRET and ENCRYPTION_KEY, naming both', async () => {
    const opening = openPanelService({ NODE_ENV: 'test', DATABASE_URL: ':memory:', LOG_LEVEL: 'silent' })
    await expect(opening).rejects.toBeInstanceOf(ConfigError)
    await expect(opening).rejects.toMatchObject({
      issues: [
        { variable: 'JWT_SECRET', message: 'required when embedded' },
        { variable: 'ENCRYPTION_KEY', message: 'required when embedded' },
      ],
    })
  })

  it('runs one scheduler step, keeps one loop, and close() stops the loop and closes the database once', async () => {
    const { service } = await hostWith(join(dir, 'close'))
    expect(await service.runMaintenanceTick()).toEqual({
      recovered: 0,
      recomputed: 0,
      expired: 0,
      started: 0,
      succeeded: 0,
      failed: 0,
      suspended: 0,
      skipped: 0,
      auditPruned: 0,
      eventsPruned: 0,
      passwordFailuresPruned: 0,
      webhooks: { subscriptions: 0, delivered: 0, retried: 0, failed: 0, disabled: 0, pruned: 0 },
      time: { panels: 0, freed: 0, overdue: 0, woken: 0 },
      exports: { resumed: 0, removed: 0 },
      fhirSubscriptions: { caughtUp: 0, checked: 0, remade: 0, removed: 0 },
    })
    const loop = service.startScheduler()
    service.startScheduler()
    await service.close()
    await service.close()
    await loop.stop()
    await expect(service.runMaintenanceTick()).rejects.toThrow()
    expect(() => service.startScheduler()).toThrow('the panel service is closed')
  })
})
