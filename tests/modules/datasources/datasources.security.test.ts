import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { createPanel, createSource, currentRecords, startApiFixture } from './fixtures.ts'

let api: Awaited<ReturnType<typeof startApiFixture>>
let t: TestApp
let alice: TestClient
let bob: TestClient
let mallory: TestClient
let panelId: number
let sourceId: number

beforeAll(async () => {
  api = await startApiFixture()
})
afterAll(() => api.server.close())

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  mallory = clientFor(t.app, 'tenant-b', 'mallory')
  panelId = (await createPanel(alice)).id
  sourceId = (await createSource(alice, panelId, { apiEndpoint: `${api.server.url}/patients`, keyField: 'id' })).body.id
})

const routes = () => [
  { method: 'GET', path: `/api/panels/${panelId}/datasources` },
  { method: 'POST', path: `/api/panels/${panelId}/datasources`, body: { type: 'api', config: { apiEndpoint: 'http://x.test' } } },
  { method: 'PUT', path: `/api/datasources/${sourceId}`, body: { config: { apiEndpoint: 'http://x.test' } } },
  { method: 'DELETE', path: `/api/datasources/${sourceId}` },
  { method: 'POST', path: `/api/datasources/${sourceId}/sync` },
  { method: 'GET', path: `/api/datasources/${sourceId}/sync-runs` },
]

const call = (c: TestClient, r: { method: string; path: string; body?: unknown }, extra?: Record<string, unknown>) => {
  const body = r.body || extra ? { ...(r.body as object), ...extra } : undefined
  if (r.method === 'GET') return c.get(r.path)
  if (r.method === 'POST') return c.post(r.path, body)
  if (r.method === 'PUT') return c.put(r.path, body)
  return c.delete(r.path, body)
}

async function unchanged() {
  const list = await alice.get(`/api/panels/${panelId}/datasources`)
  expect(list.body).toHaveLength(1)
  expect(list.body[0]).toMatchObject({
    id: sourceId,
    config: { apiEndpoint: `${api.server.url}/patients` },
    syncStatus: 'success',
  })
  expect(await currentRecords(t, sourceId)).toHaveLength(3)
  const runs = await alice.get(`/api/datasources/${sourceId}/sync-runs`)
  expect(runs.body.total).toBe(1)
}

describe('data source routes without a token', () => {
  it('answer 401 with WWW-Authenticate on every route', async () => {
    for (const r of routes()) {
      const res = await t.app.request(r.path, {
        method: r.method,
        headers: { 'Content-Type': 'application/json' },
        body: r.body ? JSON.stringify(r.body) : undefined,
      })
      expect(res.status, `${r.method} ${r.path}`).toBe(401)
      expect(res.headers.get('WWW-Authenticate')).toMatch(/^Bearer/)
    }
    await unchanged()
  })
})

describe('data source routes naming another tenant', () => {
  it('answer 403 "Access denied to tenant" for another tenantId in the body', async () => {
    for (const r of routes().filter((x) => x.method !== 'GET')) {
      const res = await call(alice, r, { tenantId: 'tenant-b' })
      expect(res.status, `${r.method} ${r.path}`).toBe(403)
      expect(res.body.error).toBe('Access denied to tenant')
    }
    await unchanged()
  })

  it('answer 403 for another tenantId in the query', async () => {
    for (const r of routes()) {
      const sep = r.path.includes('?') ? '&' : '?'
      const res = await call(alice, { ...r, path: `${r.path}${sep}tenantId=tenant-b` })
      expect(res.status, `${r.method} ${r.path}`).toBe(403)
      expect(res.body.error).toBe('Access denied to tenant')
    }
    await unchanged()
  })

  it('answer 403 "Access denied to user" for another userId', async () => {
    const res = await alice.post(`/api/datasources/${sourceId}/sync`, { userId: 'bob' })
    expect(res.status).toBe(403)
    expect(res.body.error).toBe('Access denied to user')
  })
})

describe('data source routes on another tenant’s or user’s resources', () => {
  it('answer 404 to another tenant on every route, leaving the data unchanged', async () => {
    for (const r of routes()) {
      const res = await call(mallory, r)
      expect(res.status, `${r.method} ${r.path}`).toBe(404)
      expect(['Panel not found', 'Data source not found']).toContain(res.body.error)
      expect(res.body.message).toContain('tenant-b')
    }
    await unchanged()
  })

  it('answer 404 to another user of the same tenant, leaving the data unchanged', async () => {
    for (const r of routes()) {
      const res = await call(bob, r)
      expect(res.status, `${r.method} ${r.path}`).toBe(404)
    }
    await unchanged()
  })

  it('let an admin of the tenant act on the source', async () => {
    const admin = clientFor(t.app, 'tenant-a', 'root', { role: 'admin' })
    expect((await admin.get(`/api/datasources/${sourceId}/sync-runs`)).status).toBe(200)
  })
})
