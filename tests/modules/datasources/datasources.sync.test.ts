import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { changes, dataSources } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import {
  type ApiFixture,
  apiSourceSuite,
  createPanel,
  createSource,
  currentRecords,
  PATIENTS,
  runsOf,
  waitFor,
} from './fixtures.ts'

let api: ApiFixture
let t: TestApp
let alice: TestClient
let panelId: number

apiSourceSuite((suite) => {
  ;({ api, t, alice, panelId } = suite)
})

const apiConfig = (path = '/patients', extra: Record<string, unknown> = {}) => ({
  apiEndpoint: `${api.server.url}${path}`,
  ...extra,
})
const sync = (id: number, query = '') => alice.post(`/api/datasources/${id}/sync${query}`)
/** A source synced once from /patients, then pointed at `path` (so the next sync reads it). */
async function syncedThenPointedAt(path: string, extra: Record<string, unknown> = {}) {
  const { body } = await createSource(alice, panelId, apiConfig('/patients', { keyField: 'id' }))
  await t.deps.db
    .update(dataSources)
    .set({ config: apiConfig(path, { keyField: 'id', ...extra }) })
    .where(eq(dataSources.id, body.id))
  return body as { id: number; lastSyncAt: string }
}

describe('POST /api/datasources/{id}/sync', () => {
  it('synchronises, answering the source with message, status and recordsProcessed', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig('/patients', { keyField: 'id' }))
    t.clock.advance(60_000)
    api.state.patients = [PATIENTS[0], { id: 'p4', name: 'Edsger', age: 50 }]
    const res = await sync(source.id)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      id: source.id,
      syncStatus: 'success',
      status: 'success',
      recordsProcessed: 2,
      message: '2 records synchronised from api source',
      lastSyncAt: '2026-01-01T12:01:00.000Z',
      errorMessage: null,
    })
    expect((await currentRecords(t, source.id)).map((r) => r.key)).toEqual(['p1', 'p4'])
    const runs = await runsOf(t, source.id)
    expect(runs.at(-1)).toMatchObject({ status: 'success', trigger: 'manual', rowsRead: 2, rowsWritten: 2, rowsDeleted: 2 })
    // The old generation is gone, not only hidden.
    const all = await t.client.execute({ sql: 'SELECT count(*) AS n FROM records WHERE data_source_id = ?', args: [source.id] })
    expect(Number(all.rows[0].n)).toBe(2)
    const [syncChange] = await t.deps.db
      .select()
      .from(changes)
      .where(eq(changes.action, 'SYNC'))
      .orderBy(changes.id)
      .limit(1)
      .offset(1)
    expect(syncChange.changes).toEqual({
      recordsProcessed: { newValue: 2 },
      syncStatus: { oldValue: 'success', newValue: 'success' },
    })
  })

  it('accepts an empty body, {} and the caller in the body', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    expect((await sync(source.id)).status).toBe(200)
    expect((await alice.post(`/api/datasources/${source.id}/sync`, {})).status).toBe(200)
    expect((await alice.post(`/api/datasources/${source.id}/sync`, { tenantId: 'tenant-a', userId: 'alice' })).status).toBe(200)
  })

  const failures: [string, string, Record<string, unknown>, string | RegExp][] = [
    ['a 5xx answer', '/unavailable', {}, 'API responded 503 Service Unavailable'],
    ['a timeout', '/slow?ms=2000', { timeout: 150 }, 'API request timed out after 150 ms'],
    ['a non-JSON answer', '/html', {}, 'API response is not valid JSON (content-type text/html)'],
    [
      'a dataPath that is not an array',
      '/wrapped',
      { dataPath: '$.meta' },
      'dataPath "$.meta" points to an object in the API response, not an array',
    ],
    [
      'an unreachable host',
      '/patients',
      { apiEndpoint: 'http://127.0.0.1:1/x' },
      /^API request to http:\/\/127\.0\.0\.1:1 failed: \S/,
    ],
  ]
  for (const [what, path, extra, message] of failures) {
    it(`ends in error after ${what}, keeping the previous records and lastSyncAt`, async () => {
      const source = await syncedThenPointedAt(path, extra)
      t.clock.advance(60_000)
      const res = await sync(source.id)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({
        syncStatus: 'error',
        status: 'error',
        recordsProcessed: 0,
        lastSyncAt: source.lastSyncAt,
      })
      expect(res.body.errorMessage).toMatch(message)
      expect(res.body.message).toBe(`Synchronisation failed: ${res.body.errorMessage}`)
      expect((await currentRecords(t, source.id)).map((r) => r.key)).toEqual(['p1', 'p2', 'p3'])
      const all = await t.client.execute({
        sql: 'SELECT count(*) AS n FROM records WHERE data_source_id = ?',
        args: [source.id],
      })
      expect(Number(all.rows[0].n)).toBe(3)
      expect((await runsOf(t, source.id)).at(-1)).toMatchObject({ status: 'error', error: res.body.errorMessage })
    })
  }

  it('answers 409 with the running sync run while a sync is running', async () => {
    const source = await syncedThenPointedAt('/held')
    const first = sync(source.id)
    await waitFor(async () => (api.state.release ? true : undefined))
    const second = await sync(source.id)
    expect(second.status).toBe(409)
    expect(second.body).toMatchObject({ error: 'Conflict', code: 'CONFLICT' })
    expect(second.body.details).toMatchObject({ dataSourceId: source.id, status: 'syncing', trigger: 'manual' })
    api.state.release!()
    api.state.release = undefined
    expect((await first).body.syncStatus).toBe('success')
    const [row] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, source.id))
    expect(row).toMatchObject({ leaseRunId: null, leaseExpiresAt: null, syncStatus: 'success' })
  })

  it('with ?async=true answers 202 with the run and finishes in the background', async () => {
    const source = await syncedThenPointedAt('/slow?ms=100')
    const res = await sync(source.id, '?async=true')
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ dataSourceId: source.id, status: 'syncing', trigger: 'manual', finishedAt: null })
    const run = await waitFor(async () => {
      const list = await alice.get(`/api/datasources/${source.id}/sync-runs`)
      const latest = list.body.syncRuns[0]
      return latest.status === 'syncing' ? undefined : latest
    })
    expect(run).toMatchObject({ id: res.body.id, status: 'success', rowsWritten: 3 })
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body[0].syncStatus).toBe('success')
  })

  it('rejects async values other than true/false', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const res = await sync(source.id, '?async=yes')
    expect(res.status).toBe(400)
    expect(res.body.details[0].path).toBe('query.async')
  })

  it('notifies the owners of views of the panel about synchronised data', async () => {
    const bob = clientFor(t.app, 'tenant-a', 'bob')
    await createPanel(bob)
    await t.client.execute({
      sql: `INSERT INTO views (tenant_id, user_id, panel_id, name, config, metadata, filters, sorting, column_visibility, aggregations, created_at, updated_at)
            VALUES ('tenant-a', 'bob', ?, 'v', '{"columns":[],"groupBy":[],"layout":"table"}', '{}', '[]', '[]', '{}', '[]', 'now', 'now')`,
      args: [panelId],
    })
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const rows = await t.client.execute('SELECT user_id, type, impact, message FROM notifications')
    expect(rows.rows.map((r) => ({ ...r }))).toEqual([
      { user_id: 'bob', type: 'DATA_CHANGED', impact: 'info', message: 'View "v": 3 rows entered (sync)' },
    ])
    // A sync that changes no row of the view notifies nobody; one that does says what moved.
    await sync(source.id)
    api.state.patients = [PATIENTS[0], { id: 'p9', name: 'Barbara', age: 30 }]
    await sync(source.id)
    const after = await t.client.execute('SELECT message FROM notifications ORDER BY id')
    expect(after.rows.map((r) => r.message)).toEqual([
      'View "v": 3 rows entered (sync)',
      'View "v": 1 row entered, 2 left (sync)',
    ])
  })
})

describe('private network guard', () => {
  it('ends a sync of a loopback source in error when private addresses are not allowed', async () => {
    const strict = await makeTestApp({ env: { ALLOW_PRIVATE_NETWORK_SOURCES: 'false' } })
    const carol = clientFor(strict.app, 'tenant-a', 'carol')
    const panel = await createPanel(carol)
    const before = api.server.requests.length
    const res = await createSource(carol, panel.id, apiConfig())
    expect(res.status).toBe(201)
    expect(api.server.requests.length).toBe(before)
    expect(res.body.syncStatus).toBe('error')
    expect(res.body.errorMessage).toMatch(
      /Refusing to connect to 127\.0\.0\.1: it is a loopback address.*private network addresses/,
    )
  })
})
