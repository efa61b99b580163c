import { and, eq } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { notifications } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { baseColumn, createPanel, importRows } from './import.fixtures.ts'

let t: TestApp
let alice: TestClient
let panelId: number
let viewId: number

const messages = async () =>
  (
    await t.deps.db
      .select()
      .from(notifications)
      .where(and(eq(notifications.tenantId, 'tenant-a'), eq(notifications.type, 'DATA_CHANGED')))
      .orderBy(notifications.id)
  ).map((n) => [n.userId, n.viewId, n.message])

/** Alice's panel with an Age column and her view of the rows with Age ≥ 30. */
beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await createPanel(alice)
  await baseColumn(alice, panelId, { name: 'MRN', sourceField: 'mrn' })
  await baseColumn(alice, panelId, { name: 'Age', sourceField: 'age', type: 'number' })
  const view = await alice.post('/api/views', {
    name: 'Over 30',
    panelId,
    filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
  })
  viewId = view.body.id
})

const CONFIG = {
  format: 'json',
  mapping: [
    { sourceField: 'mrn', targetColumn: 'MRN' },
    { sourceField: 'age', targetColumn: 'Age' },
  ],
  options: { updateExisting: true },
  validation: { uniqueFields: ['mrn'] },
}

describe('notifications after an import', () => {
  it("tells the view's owner how many rows entered and left, when someone else imported", async () => {
    // Carol, an admin of the tenant, imports into Alice's panel.
    const headers = { ...(await authHeaders('tenant-a', 'carol', { role: 'admin' })), 'Content-Type': 'application/json' }
    const asAdmin = (rows: unknown[]) =>
      t.app.request(`/api/panels/${panelId}/import`, { method: 'POST', headers, body: JSON.stringify({ config: CONFIG, rows }) })
    const first = await asAdmin([
      { mrn: 'a', age: 25 },
      { mrn: 'b', age: 35 },
      { mrn: 'c', age: 45 },
      { mrn: 'd', age: 55 },
    ])
    expect(first.status).toBe(200)
    expect(await messages()).toEqual([['alice', viewId, 'View "Over 30": 3 rows entered (import)']])
    // a: 25 → 31 enters; b, c: drop below 30 and leave; e is new and enters; d is untouched.
    await asAdmin([
      { mrn: 'a', age: 31 },
      { mrn: 'b', age: 20 },
      { mrn: 'c', age: 21 },
      { mrn: 'e', age: 60 },
    ])
    expect((await messages())[1]).toEqual(['alice', viewId, 'View "Over 30": 2 rows entered, 2 left (import)'])
    // Rows that change without crossing the filter notify nobody.
    await asAdmin([{ mrn: 'd', age: 56 }])
    expect(await messages()).toHaveLength(2)
  })

  it('never notifies the actor about their own views', async () => {
    const res = await importRows(t, panelId, CONFIG, [{ mrn: 'a', age: 40 }])
    expect(res.body.rowsImported).toBe(1)
    expect(await messages()).toEqual([])
  })
})

describe('notifications after a sync (the membership step of the sync run)', () => {
  let server: FixtureServer
  const state = { patients: [] as { id: string; age: number }[] }

  beforeAll(async () => {
    server = await startJsonServer((_req, res) => sendJson(res, 200, state.patients))
  })
  afterAll(() => server.close())

  it('compares membership across the generation switch by record key, once per sync run', async () => {
    state.patients = [
      { id: 'p1', age: 40 },
      { id: 'p2', age: 50 },
      { id: 'p3', age: 20 },
    ]
    const created = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${server.url}/patients`, keyField: 'id' },
    })
    expect(created.body.syncStatus).toBe('success')
    await baseColumn(alice, panelId, { name: 'Patient age', sourceField: 'age', type: 'number' })
    await alice.put(`/api/views/${viewId}`, {
      filters: [{ columnTitle: 'Patient age', operator: 'greaterThanOrEqual', value: 30 }],
    })
    // p1 unchanged (and rewritten in a new generation), p2 leaves, p3 enters, p4 is new and enters.
    state.patients = [
      { id: 'p1', age: 40 },
      { id: 'p2', age: 10 },
      { id: 'p3', age: 33 },
      { id: 'p4', age: 70 },
    ]
    // Carol, an admin, syncs: Alice hears of it once; a sync that moves nothing says nothing.
    const carol = clientFor(t.app, 'tenant-a', 'carol', { role: 'admin' })
    const sync = await carol.post(`/api/datasources/${created.body.id}/sync`, {})
    expect(sync.body.syncStatus).toBe('success')
    expect((await carol.post(`/api/datasources/${created.body.id}/sync`, {})).body.syncStatus).toBe('success')
    expect(await messages()).toEqual([['alice', viewId, 'View "Over 30": 2 rows entered, 1 left (sync)']])
    // The actor's own views get no notice: Alice syncs a change and hears nothing.
    state.patients = [{ id: 'p1', age: 40 }]
    expect((await alice.post(`/api/datasources/${created.body.id}/sync`, {})).body.syncStatus).toBe('success')
    expect(await messages()).toHaveLength(1)
  })
})
