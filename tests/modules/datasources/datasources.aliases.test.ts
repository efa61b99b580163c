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
