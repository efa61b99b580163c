import { createHmac } from 'node:crypto'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { requireDataSource } from '../../../src/modules/datasources/datasources.service.ts'
import { executeSync } from '../../../src/modules/datasources/datasources.sync.ts'
import { beginSync } from '../../../src/modules/datasources/datasources.sync-lease.ts'
import { makeTestApp, serviceCtx, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { type ApiFixture, createPanel, createSource, startApiFixture } from './fixtures.ts'

// Every statement here runs on a connection of its own with foreign keys off (the remote libSQL
// protocol's worst case, tests/helpers/fresh-connection-client.ts): what a delete removes must be
// removed by the service itself, not by a connection's PRAGMA foreign_keys and ON DELETE CASCADE.

const SECRET = 'whsec-0123456789abcdef'
let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  t = await makeTestApp({ database: 'fresh-connection' })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})
afterEach(() => t.client.close())

/** Rows of `table` that belong to data source `id`. */
async function countOf(table: 'records' | 'sync_runs' | 'webhook_events', id: number) {
  const rs = await t.client.execute({ sql: `SELECT count(*) AS n FROM ${table} WHERE data_source_id = ?`, args: [id] })
  return Number(rs.rows[0].n)
}

async function webhookSourceWithDelivery(endpoint = 'ehr-patients') {
  const created = await createSource(alice, panelId, { endpoint, secret: SECRET, events: ['data.created'] }, 'webhook')
  expect(created.status).toBe(201)
  const body = JSON.stringify({ id: 'evt-1', event: 'data.created', data: { id: 'p1', name: 'Ada' } })
  const res = await t.app.request(`/api/webhooks/${endpoint}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Signature-256': createHmac('sha256', SECRET).update(body).digest('hex') },
    body,
  })
  expect(res.status).toBe(200)
  const id = created.body.id as number
  expect([await countOf('records', id), await countOf('sync_runs', id), await countOf('webhook_events', id)]).toEqual([1, 1, 1])
  return id
}

describe.skipIf(onTarget(['workers', 'deno'], SKIP.freshConnections))('deletes without connection state', () => {
  it('runs on connections without foreign keys, so nothing below leans on them', async () => {
    const rs = await t.client.execute('PRAGMA foreign_keys')
    expect(Number(rs.rows[0][0])).toBe(0)
  })

  it('deleting a data source removes its records, sync runs and webhook event ids', async () => {
    const id = await webhookSourceWithDelivery()
    expect((await alice.delete(`/api/datasources/${id}`)).status).toBe(204)
    expect([await countOf('records', id), await countOf('sync_runs', id), await countOf('webhook_events', id)]).toEqual([0, 0, 0])
  })

  it('deleting a panel hides its sources, rows and webhook endpoint (soft delete: change records stay)', async () => {
    const id = await webhookSourceWithDelivery()
    expect((await alice.delete(`/api/panels/${panelId}`)).status).toBe(204)
    expect((await alice.get(`/api/datasources/${id}`)).status).toBe(404)
    expect((await alice.get(`/api/panels/${panelId}/rows`)).status).toBe(404)
    const body = JSON.stringify({ id: 'evt-2', event: 'data.created', data: { id: 'p2', name: 'Grace' } })
    const late = await t.app.request('/api/webhooks/ehr-patients', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Signature-256': createHmac('sha256', SECRET).update(body).digest('hex') },
      body,
    })
    expect(late.status).toBe(404)
    expect([await countOf('records', id), await countOf('webhook_events', id)]).toEqual([1, 1])
    const kept = await t.client.execute({
      sql: "SELECT action FROM changes WHERE panel_id = ? AND entity_type = 'Panel'",
      args: [panelId],
    })
    expect(kept.rows.map((r) => r.action)).toEqual(['CREATE', 'DELETE'])
  })
})

describe.skipIf(onTarget(['workers', 'deno'], SKIP.freshConnections))('writes for a data source deleted meanwhile', () => {
  let api: ApiFixture
  beforeAll(async () => {
    api = await startApiFixture()
  })
  afterAll(() => api.server.close())

  it('a sync that reads after its source was deleted stores no orphan records', async () => {
    const created = await createSource(alice, panelId, { apiEndpoint: `${api.server.url}/patients`, keyField: 'id' })
    expect(created.status).toBe(201)
    const id = created.body.id as number
    const ctx = serviceCtx(t.deps, 'tenant-a', 'alice')
    const source = await requireDataSource(ctx, id)
    const run = await beginSync(ctx, source, 'manual')
    expect((await alice.delete(`/api/datasources/${id}`)).status).toBe(204)
    await executeSync(ctx, source, run)
    expect([await countOf('records', id), await countOf('sync_runs', id)]).toEqual([0, 0])
  })
})
