import { and, eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { changes, columns, views } from '../../../src/db/schema.ts'
import type { TestApp } from '../../helpers/app.ts'
import type { TestClient } from '../../helpers/http.ts'
import { TARGET } from '../../helpers/target.ts'
import { type ApiFixture, allRecords, apiSourceSuite, createSource, currentRecords, PATIENTS, runsOf } from './fixtures.ts'

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
const changesOf = (entityId: number) =>
  t.deps.db
    .select()
    .from(changes)
    .where(and(eq(changes.entityType, 'DataSource'), eq(changes.entityId, entityId)))
    .orderBy(changes.id)
const seedView = (userId: string) =>
  t.deps.db.insert(views).values({
    tenantId: 'tenant-a',
    userId,
    panelId,
    name: 'Bob view',
    config: { columns: [], groupBy: [], layout: 'table' },
    metadata: {},
    filters: [],
    sorting: [],
    columnVisibility: {},
    aggregations: [],
    createdAt: '2026-01-01T12:00:00.000Z',
    updatedAt: '2026-01-01T12:00:00.000Z',
  })

describe('POST /api/panels/{panelId}/datasources', () => {
  it('creates an api source and runs the initial sync before answering', async () => {
    const res = await createSource(alice, panelId, apiConfig('/patients', { keyField: 'id' }))
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      id: expect.any(Number),
      panelId,
      type: 'api',
      config: { apiEndpoint: `${api.server.url}/patients`, keyField: 'id' },
      syncStatus: 'success',
      errorMessage: null,
      lastSyncAt: '2026-01-01T12:00:00.000Z',
      nextSyncAt: null,
      tenantId: 'tenant-a',
      userId: 'alice',
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    })
    const stored = await currentRecords(t, res.body.id)
    expect(stored).toEqual(PATIENTS.map((p) => ({ key: p.id, data: p })))
    const [run] = await runsOf(t, res.body.id)
    expect(run).toMatchObject({ status: 'success', trigger: 'create', rowsRead: 3, rowsWritten: 3, rowsDeleted: 0, error: null })
  })

  it('records a CREATE and a SYNC change', async () => {
    const { body } = await createSource(alice, panelId, apiConfig())
    const rows = await changesOf(body.id)
    expect(rows.map((r) => [r.entityType, r.action])).toEqual([
      ['DataSource', 'CREATE'],
      ['DataSource', 'SYNC'],
    ])
    expect(rows[0]).toMatchObject({ panelId, tenantId: 'tenant-a', userId: 'alice' })
    expect(rows[1].changes).toEqual({
      recordsProcessed: { newValue: 3 },
      syncStatus: { oldValue: 'pending', newValue: 'success' },
    })
  })

  it('keys records by a content hash without keyField, keeping identical rows apart', async () => {
    api.state.patients = [PATIENTS[0], PATIENTS[0], PATIENTS[1]]
    const { body } = await createSource(alice, panelId, apiConfig())
    const stored = await currentRecords(t, body.id)
    expect(stored).toHaveLength(3)
    expect(stored[0].key).toMatch(/^[0-9a-f]{32}$/)
    expect(stored[1].key).toBe(`${stored[0].key}#2`)
  })

  it('reads the array at dataPath', async () => {
    const { body } = await createSource(alice, panelId, apiConfig('/wrapped', { dataPath: '$.data.items' }))
    expect(body.syncStatus).toBe('success')
    expect(await currentRecords(t, body.id)).toHaveLength(3)
  })

  it('rejects an unknown type, naming type', async () => {
    const res = await createSource(alice, panelId, apiConfig(), 'ftp')
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: 'Validation Error', code: 'VALIDATION_ERROR' })
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['type'])
  })

  it('requires config as an object', async () => {
    for (const config of [undefined, 'x', [1], null]) {
      const res = await alice.post(`/api/panels/${panelId}/datasources`, { type: 'api', config })
      expect(res.status).toBe(400)
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain('config')
    }
  })

  it('validates the api config, naming each bad field', async () => {
    const res = await createSource(alice, panelId, {
      apiEndpoint: 'ftp://example.org/x',
      method: 'DELETE',
      timeout: 300_001,
      dataPath: 'a..b',
      headers: { 'X-Num': 1 },
    })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'config.apiEndpoint',
      'config.dataPath',
      'config.headers.X-Num',
      'config.method',
      'config.timeout',
    ])
    const missing = await createSource(alice, panelId, {})
    expect(missing.body.details.map((d: { path: string }) => d.path)).toEqual(['config.apiEndpoint'])
  })

  it('answers 404 for a missing or deleted panel', async () => {
    expect((await createSource(alice, 9999, apiConfig())).status).toBe(404)
    await alice.delete(`/api/panels/${panelId}`)
    const res = await createSource(alice, panelId, apiConfig())
    expect(res.status).toBe(404)
    expect(res.body.error).toBe('Panel not found')
  })

  it('stores a source whose initial sync cannot connect, ending it in an honest error', async () => {
    const res = await createSource(alice, panelId, { connectionString: 'postgres://u:p@127.0.0.1:1/x', table: 't' }, 'database')
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ syncStatus: 'error', lastSyncAt: null })
    // workerd's sockets do not tell a refused connection from an unreachable address.
    expect(res.body.errorMessage).toBe(
      TARGET === 'workers'
        ? 'Could not connect to PostgreSQL at 127.0.0.1: connection refused or address unreachable'
        : 'Could not connect to PostgreSQL at 127.0.0.1: connection refused',
    )
    expect(await allRecords(t, res.body.id)).toHaveLength(0)
  })

  it('answers 201 with syncStatus error when the initial sync fails', async () => {
    const res = await createSource(alice, panelId, apiConfig('/unavailable', { retryAttempts: 0 }))
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      syncStatus: 'error',
      errorMessage: 'API responded 503 Service Unavailable: down',
      lastSyncAt: null,
    })
    const [run] = await runsOf(t, res.body.id)
    expect(run).toMatchObject({ status: 'error', error: 'API responded 503 Service Unavailable: down' })
  })

  it('sends the bearer token of authentication to the API', async () => {
    const res = await createSource(
      alice,
      panelId,
      apiConfig('/echo-auth', { authentication: { type: 'bearer', token: 's3cret' } }),
    )
    expect(res.body.syncStatus).toBe('success')
    const [record] = await currentRecords(t, res.body.id)
    expect(record.data.authorization).toBe('Bearer s3cret')
  })
})

describe('GET /api/panels/{panelId}/datasources', () => {
  it('lists the sources of the panel in creation order', async () => {
    const a = await createSource(alice, panelId, apiConfig())
    const b = await createSource(alice, panelId, apiConfig('/unavailable'))
    const res = await alice.get(`/api/panels/${panelId}/datasources`)
    expect(res.status).toBe(200)
    expect(res.body.map((s: { id: number }) => s.id)).toEqual([a.body.id, b.body.id])
    expect(res.body[1]).toMatchObject({ syncStatus: 'error' })
  })

  it('answers an empty array for a panel without sources and 404 for a missing panel', async () => {
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body).toEqual([])
    expect((await alice.get('/api/panels/9999/datasources')).status).toBe(404)
  })

  it('hides the sources of a deleted panel', async () => {
    const { body } = await createSource(alice, panelId, apiConfig())
    await alice.delete(`/api/panels/${panelId}`)
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).status).toBe(404)
    expect((await alice.post(`/api/datasources/${body.id}/sync`)).status).toBe(404)
  })
})

describe('PUT /api/datasources/{id}', () => {
  it('replaces the config and records the diff', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const res = await alice.put(`/api/datasources/${source.id}`, { config: apiConfig('/wrapped', { dataPath: 'data.items' }) })
    expect(res.status).toBe(200)
    expect(res.body.config).toEqual(apiConfig('/wrapped', { dataPath: 'data.items' }))
    const update = (await changesOf(source.id)).find((c) => c.action === 'UPDATE')
    expect(update?.changes).toEqual({
      config: { oldValue: apiConfig(), newValue: apiConfig('/wrapped', { dataPath: 'data.items' }) },
    })
  })

  it('changes the type, validating the config against it', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const bad = await alice.put(`/api/datasources/${source.id}`, { type: 'fhir' })
    expect(bad.status).toBe(400)
    expect(bad.body.details.map((d: { path: string }) => d.path)).toContain('config.baseUrl')
    const fhirConfig = { baseUrl: api.server.url, resourceType: 'Patient' }
    const ok = await alice.put(`/api/datasources/${source.id}`, { type: 'fhir', config: fhirConfig })
    expect(ok.body).toMatchObject({ type: 'fhir', config: fhirConfig })
  })

  it('rejects a bad type or config naming the field, and answers 404 for an unknown id', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    expect((await alice.put(`/api/datasources/${source.id}`, { type: 'nope' })).body.details[0].path).toBe('type')
    const res = await alice.put(`/api/datasources/${source.id}`, { config: { apiEndpoint: 'not a url' } })
    expect(res.body.details[0].path).toBe('config.apiEndpoint')
    expect((await alice.put('/api/datasources/9999', { config: apiConfig() })).status).toBe(404)
    expect((await alice.put('/api/datasources/abc', { config: apiConfig() })).status).toBe(400)
  })

  it("warns the owners of the panel's views, not the actor", async () => {
    await seedView('bob')
    await seedView('alice')
    const { body: source } = await createSource(alice, panelId, apiConfig())
    await alice.put(`/api/datasources/${source.id}`, { config: apiConfig('/wrapped') })
    const rows = await t.client.execute("SELECT user_id, type, impact FROM notifications WHERE impact = 'warning'")
    expect(rows.rows.map((r) => [r.user_id, r.type, r.impact])).toEqual([['bob', 'DATA_CHANGED', 'warning']])
  })
})

describe('DELETE /api/datasources/{id}', () => {
  it('deletes the source with its records and runs, unlinks columns and records the change', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const [column] = await t.deps.db
      .insert(columns)
      .values({
        tenantId: 'tenant-a',
        userId: 'alice',
        panelId,
        columnType: 'base',
        name: 'name',
        type: 'text',
        sourceField: 'name',
        dataSourceId: source.id,
        properties: {},
        metadata: {},
        createdAt: '2026-01-01T12:00:00.000Z',
        updatedAt: '2026-01-01T12:00:00.000Z',
      })
      .returning()
    const res = await alice.delete(`/api/datasources/${source.id}`)
    expect(res.status).toBe(204)
    expect(res.body).toBeNull()
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body).toEqual([])
    expect(await allRecords(t, source.id)).toHaveLength(0)
    expect(await runsOf(t, source.id)).toHaveLength(0)
    const [after] = await t.deps.db.select().from(columns).where(eq(columns.id, column.id))
    expect(after.dataSourceId).toBeNull()
    expect((await changesOf(source.id)).map((c) => c.action)).toContain('DELETE')
    expect((await alice.delete(`/api/datasources/${source.id}`)).status).toBe(404)
  })
})

describe('GET /api/datasources/{id}/sync-runs', () => {
  it('lists runs newest first with a total, honouring limit', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    await alice.post(`/api/datasources/${source.id}/sync`)
    await alice.post(`/api/datasources/${source.id}/sync`)
    const res = await alice.get(`/api/datasources/${source.id}/sync-runs?limit=2`)
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(3)
    expect(res.body.syncRuns).toHaveLength(2)
    expect(res.body.syncRuns[0]).toEqual({
      id: expect.any(Number),
      dataSourceId: source.id,
      status: 'success',
      trigger: 'manual',
      startedAt: '2026-01-01T12:00:00.000Z',
      finishedAt: '2026-01-01T12:00:00.000Z',
      durationMs: expect.any(Number),
      rowsRead: 3,
      rowsWritten: 3,
      rowsDeleted: 0,
      truncated: false,
      error: null,
    })
    expect(res.body.syncRuns[0].id).toBeGreaterThan(res.body.syncRuns[1].id)
  })

  it('rejects a limit outside 1–100 and answers 404 for an unknown source', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    for (const limit of ['0', '101', 'x']) {
      const res = await alice.get(`/api/datasources/${source.id}/sync-runs?limit=${limit}`)
      expect(res.status).toBe(400)
      expect(res.body.details[0].path).toBe('query.limit')
    }
    expect((await alice.get('/api/datasources/9999/sync-runs')).status).toBe(404)
  })
})
