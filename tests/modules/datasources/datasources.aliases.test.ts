import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { dataSources } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type ApiFixture, apiSourceSuite, createPanel, createSource, runsOf } from './fixtures.ts'

let api: ApiFixture
let t: TestApp
let alice: TestClient
let panelId: number

apiSourceSuite((suite) => {
  ;({ api, t, alice, panelId } = suite)
})

const apiConfig = (path = '/patients') => ({ apiEndpoint: `${api.server.url}${path}`, keyField: 'id' })

async function apiSource() {
  const res = await createSource(alice, panelId, apiConfig())
  expect(res.status).toBe(201)
  return res.body as { id: number; lastSyncAt: string | null }
}

const stored = async (id: number) => (await t.deps.db.select().from(dataSources).where(eq(dataSources.id, id)))[0]

describe('DataSource answers carry lastSync (alias of lastSyncAt)', () => {
  it('on create, list, update and sync, always equal to lastSyncAt', async () => {
    const created = await createSource(alice, panelId, apiConfig())
    expect(created.body.lastSyncAt).toBe('2026-01-01T12:00:00.000Z')
    expect(created.body.lastSync).toBe(created.body.lastSyncAt)
    const id = created.body.id

    const [listed] = (await alice.get(`/api/panels/${panelId}/datasources`)).body
    expect(listed).toMatchObject({ lastSyncAt: '2026-01-01T12:00:00.000Z', lastSync: '2026-01-01T12:00:00.000Z' })

    t.clock.advance(60_000)
    const synced = await alice.post(`/api/datasources/${id}/sync`)
    expect(synced.body).toMatchObject({ lastSyncAt: '2026-01-01T12:01:00.000Z', lastSync: '2026-01-01T12:01:00.000Z' })

    t.clock.advance(60_000)
    const updated = await alice.put(`/api/datasources/${id}`, { config: apiConfig('/unavailable') })
    expect(updated.status).toBe(200)
    expect(updated.body).toMatchObject({ lastSyncAt: '2026-01-01T12:01:00.000Z', lastSync: '2026-01-01T12:01:00.000Z' })
    // A failed sync leaves both unchanged.
    const failed = await alice.post(`/api/datasources/${id}/sync`)
    expect(failed.body).toMatchObject({
      syncStatus: 'error',
      lastSyncAt: '2026-01-01T12:01:00.000Z',
      lastSync: '2026-01-01T12:01:00.000Z',
    })
  })

  it('is null while the source never synced', async () => {
    const res = await createSource(
      alice,
      panelId,
      { endpoint: 'ehr', secret: 'whsec-0123456789', events: ['data.created'] },
      'webhook',
    )
    expect(res.body).toMatchObject({ syncStatus: 'pending', lastSyncAt: null, lastSync: null })
  })
})

describe('POST /api/panels/{panelId}/datasources/{id}/sync (deprecated alias)', () => {
  it('synchronises like the flat route and answers the same shape', async () => {
    const source = await apiSource()
    t.clock.advance(60_000)
    const res = await alice.post(`/api/panels/${panelId}/datasources/${source.id}/sync`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      id: source.id,
      panelId,
      syncStatus: 'success',
      status: 'success',
      recordsProcessed: 3,
      message: '3 records synchronised from api source',
      lastSyncAt: '2026-01-01T12:01:00.000Z',
      lastSync: '2026-01-01T12:01:00.000Z',
    })
    expect((await runsOf(t, source.id)).map((r) => r.trigger)).toEqual(['create', 'manual'])
  })

  it('accepts ?async=true and answers 202 with the sync run', async () => {
    const source = await apiSource()
    const res = await alice.post(`/api/panels/${panelId}/datasources/${source.id}/sync?async=true`)
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ dataSourceId: source.id, trigger: 'manual' })
    expect((await alice.post(`/api/panels/${panelId}/datasources/${source.id}/sync?async=maybe`)).status).toBe(400)
  })

  it('answers 404 for a source of another panel, exactly as for a missing one, and syncs nothing', async () => {
    const source = await apiSource()
    const other = (await createPanel(alice, 'Other')).id
    const wrong = await alice.post(`/api/panels/${other}/datasources/${source.id}/sync`)
    const missing = await alice.post(`/api/panels/${other}/datasources/999/sync`)
    expect(wrong.status).toBe(404)
    expect(wrong.body).toMatchObject({
      error: 'Data source not found',
      message: `Data source ${source.id} not found for tenant tenant-a`,
    })
    expect(missing.status).toBe(404)
    expect(missing.body.error).toBe(wrong.body.error)
    expect((await runsOf(t, source.id)).length).toBe(1)
  })

  it('checks the token, the tenant and ownership like the flat route', async () => {
    const source = await apiSource()
    const path = `/api/panels/${panelId}/datasources/${source.id}/sync`
    expect((await t.app.request(path, { method: 'POST' })).status).toBe(401)
    expect((await alice.post(`${path}?tenantId=tenant-b`)).status).toBe(403)
    expect((await clientFor(t.app, 'tenant-a', 'bob').post(path)).status).toBe(404)
    expect((await clientFor(t.app, 'tenant-b', 'eve').post(path)).status).toBe(404)
    expect((await alice.post(`/api/panels/abc/datasources/${source.id}/sync`)).body.details).toEqual([
      { path: 'panelId', message: 'must be a positive integer' },
    ])
  })

  it('counts against the same sync rate limit as the flat route', async () => {
    const limited = await makeTestApp({ env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_SYNCS: '2/60' } })
    const carol = clientFor(limited.app, 'tenant-a', 'carol')
    const panel = (await createPanel(carol)).id
    const { id } = (await createSource(carol, panel, apiConfig())).body
    expect((await carol.post(`/api/datasources/${id}/sync`)).status).toBe(200)
    const nested = await carol.post(`/api/panels/${panel}/datasources/${id}/sync`)
    expect(nested.status).toBe(200)
    expect(nested.headers.get('ratelimit-remaining')).toBe('0')
    expect((await carol.post(`/api/panels/${panel}/datasources/${id}/sync`)).status).toBe(429)
    expect((await carol.post(`/api/datasources/${id}/sync`)).status).toBe(429)
  })
})

describe('PUT and DELETE /api/panels/{panelId}/datasources/{id} (deprecated aliases)', () => {
  it('update and delete like the flat routes', async () => {
    const source = await apiSource()
    const put = await alice.put(`/api/panels/${panelId}/datasources/${source.id}`, { config: apiConfig('/wrapped') })
    expect(put.status).toBe(200)
    expect(put.body.config.apiEndpoint).toBe(`${api.server.url}/wrapped`)
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body[0].config.apiEndpoint).toBe(`${api.server.url}/wrapped`)
    const del = await alice.delete(`/api/panels/${panelId}/datasources/${source.id}`)
    expect(del.status).toBe(204)
    expect(await stored(source.id)).toBeUndefined()
  })

  it('validate the body like the flat route (400 naming the field)', async () => {
    const source = await apiSource()
    const res = await alice.put(`/api/panels/${panelId}/datasources/${source.id}`, { type: 'bogus' })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['type'])
  })

  it('answer 404 for a source of another panel and leave it unchanged', async () => {
    const source = await apiSource()
    const other = (await createPanel(alice, 'Other')).id
    const before = await stored(source.id)
    const put = await alice.put(`/api/panels/${other}/datasources/${source.id}`, { config: apiConfig('/wrapped') })
    expect(put.status).toBe(404)
    expect(put.body.error).toBe('Data source not found')
    expect((await alice.delete(`/api/panels/${other}/datasources/${source.id}`)).status).toBe(404)
    expect(await stored(source.id)).toEqual(before)
  })
})
