import { createHmac } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventData } from '../../../src/rowstore/event-json.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { startRelay, startSubscriptionServer } from '../../helpers/fhir-subscription-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { waitFor } from '../datasources/fixtures.ts'
import { importRows } from '../rows/import.fixtures.ts'

/**
 * Every writer of rows goes through the row store's one write protocol (src/rowstore/write.ts),
 * so the change feed cannot differ by path: the same change made by each writer — an incremental
 * sync, a webhook delivery, a webhook snapshot, a FHIR Subscription notification, an import —
 * appends the same `row.*` and `panel.rows_changed` events as that change made by a full sync
 * (whose own events are checked against the expected list first). Ids, sources, keys of keyless
 * writers and the cause differ by path and are left out of the comparison; rows are named by their
 * `Id` cell.
 */

interface Patient {
  id: string
  name: string
  age: number
}

const BEFORE: Patient[] = [
  { id: 'p1', name: 'Ada', age: 40 },
  { id: 'p2', name: 'Grace', age: 45 },
  { id: 'p3', name: 'Alan', age: 20 },
  { id: 'p5', name: 'Bob', age: 70 },
]
/** p1 leaves the view, p3 enters it, p4 is new and enters, p5 is renamed (row.updated), p2 stays. */
const CHANGED: Patient[] = [
  { id: 'p1', name: 'Ada', age: 25 },
  { id: 'p3', name: 'Alan', age: 50 },
  { id: 'p4', name: 'Mary', age: 60 },
  { id: 'p5', name: 'Robert', age: 70 },
]
const afterChange = (deleted: string[] = []) =>
  [...BEFORE.filter((p) => !CHANGED.some((c) => c.id === p.id)), ...CHANGED].filter((p) => !deleted.includes(p.id))

const SECRET = 'whsec-0123456789abcdef'
let api: FixtureServer
const served = { patients: BEFORE }
let filesDir: string

beforeAll(async () => {
  api = await startJsonServer((_req, res) => sendJson(res, 200, served.patients))
  filesDir = await mkdtemp(join(tmpdir(), 'write-writers-'))
})
afterAll(async () => {
  await api.close()
  await rm(filesDir, { recursive: true, force: true })
})

/** A panel with the columns Id, Name, Age and alice's view "Over 30" (Age ≥ 30). */
interface World {
  t: TestApp
  alice: TestClient
  panelId: number
}

/**
 * `files`: the app reads the test's files folder (a SQLite source), which only the node target has;
 * `env`: the app's own settings (PUBLIC_BASE_URL for a FHIR Subscription source).
 */
async function world(files = false, env?: Record<string, string>): Promise<World> {
  const t = await makeTestApp({ ...(files ? { filesDir } : {}), ...(env ? { env } : {}) })
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  for (const column of [
    { name: 'Id', sourceField: 'id' },
    { name: 'Name', sourceField: 'name' },
    { name: 'Age', sourceField: 'age', type: 'number' },
  ]) {
    expect((await alice.post(`/api/panels/${panelId}/columns/base`, column)).status).toBe(201)
  }
  const view = await alice.post('/api/views', {
    name: 'Over 30',
    panelId,
    filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
  })
  expect(view.status).toBe(201)
  return { t, alice, panelId }
}

interface FeedEvent {
  seq: number
  type: string
  view_id: number | null
  data: Record<string, any>
}

const lastSeq = async (w: World) =>
  Number(
    (await w.t.deps.db.all<{ n: number }>(sql`SELECT coalesce(max(seq), 0) AS n FROM events WHERE tenant_id = 'tenant-a'`))[0].n,
  )

/**
 * The row events and `panel.rows_changed` of the writes after `from`, as readers answer them,
 * without what differs by path: the row's `_id` and `_source`, record keys (a row is named by its
 * Id cell), view ids (views by name) and the cause. Sorted, so the order of keys does not count.
 */
async function changeEvents(w: World, from: number) {
  const rows = await w.t.deps.db.all<FeedEvent & { data: string }>(sql`
    SELECT e.seq, e.type, e.view_id, e.data, v.name AS view FROM events e LEFT JOIN views v ON v.id = e.view_id
    WHERE e.tenant_id = 'tenant-a' AND e.seq > ${from} AND (e.type LIKE 'row.%' OR e.type = 'panel.rows_changed')
    ORDER BY e.seq`)
  return rows
    .map((r) => {
      const data = eventData(r.type, JSON.parse(r.data)) as Record<string, any>
      if (r.type === 'panel.rows_changed') {
        const { cause: _cause, ...counts } = data
        return { type: r.type, counts }
      }
      const { _id, _key, _source, ...row } = data.row
      return { type: r.type, view: (r as unknown as { view: string }).view, id: row.Id, row, changed: data.changed }
    })
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
}

const viewRow = (p: Patient) => ({ Id: p.id, Name: p.name, Age: p.age })

/** The reference: the same change made by a full sync of an API source (BEFORE, then `patients`). */
async function byFullSync(patients: Patient[]) {
  const w = await world()
  served.patients = BEFORE
  const created = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${api.url}/patients`, keyField: 'id' },
  })
  expect(created.body.syncStatus).toBe('success')
  const from = await lastSeq(w)
  served.patients = patients
  expect((await w.alice.post(`/api/datasources/${created.body.id}/sync`, {})).body.syncStatus).toBe('success')
  return changeEvents(w, from)
}

// --- the writers ---

async function webhookWorld() {
  const w = await world()
  const res = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
    type: 'webhook',
    config: {
      endpoint: 'ward',
      secret: SECRET,
      keyField: 'id',
      batchEvents: true,
      events: ['data.created', 'data.updated', 'data.deleted', 'sync.started', 'sync.completed'],
    },
  })
  expect(res.status).toBe(201)
  const deliver = async (body: unknown) => {
    const raw = JSON.stringify(body)
    const signature = `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`
    const sent = await w.t.app.request('/api/webhooks/ward', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Signature-256': signature },
      body: raw,
    })
    expect(sent.status).toBe(200)
  }
  await deliver({ event: 'data.created', data: BEFORE })
  return { w, deliver }
}

describe('the write protocol: each writer appends the events a sync appends for the same change', () => {
  it('a full sync (the generation switch) appends the moves of its change, and a resync of the same rows none', async () => {
    const events = await byFullSync(afterChange(['p2']))
    const [p1, p2, p3, p4, p5] = [BEFORE[0], BEFORE[1], CHANGED[1], CHANGED[2], CHANGED[3]]
    expect(events).toEqual(
      [
        { type: 'row.left', view: 'Over 30', id: 'p1', row: viewRow(p1), changed: undefined },
        { type: 'row.left', view: 'Over 30', id: 'p2', row: viewRow(p2), changed: undefined },
        { type: 'row.entered', view: 'Over 30', id: 'p3', row: viewRow(p3), changed: undefined },
        { type: 'row.entered', view: 'Over 30', id: 'p4', row: viewRow(p4), changed: undefined },
        {
          type: 'row.updated',
          view: 'Over 30',
          id: 'p5',
          row: viewRow(p5),
          changed: { Name: { from: 'Bob', to: 'Robert' } },
        },
        { type: 'panel.rows_changed', counts: { inserted: 1, updated: 3, deleted: 1 } },
      ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    )
    expect(await byFullSync(BEFORE)).toEqual([])
  })

  it('an incremental sync', { skip: onTarget('workers', SKIP.noSqlite) }, async () => {
    const w = await world(true)
    const file = join(filesDir, 'ward.sqlite')
    const db = createClient({ url: `file:${file}` })
    await db.executeMultiple(
      'DROP TABLE IF EXISTS ward; CREATE TABLE ward (id TEXT PRIMARY KEY, name TEXT, age INTEGER, seq INTEGER);',
    )
    const write = (patients: Patient[], seq: number) =>
      db.batch(
        patients.map((p) => ({
          sql: 'INSERT INTO ward VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, age = excluded.age, seq = excluded.seq',
          args: [p.id, p.name, p.age, seq],
        })),
      )
    await write(BEFORE, 1)
    const created = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
      type: 'database',
      config: { connectionString: 'file:ward.sqlite', table: 'ward', keyField: 'id', incrementalColumn: 'seq', batchSize: 100 },
    })
    expect(created.body.syncStatus).toBe('success')
    const from = await lastSeq(w)
    await write(CHANGED, 2)
    db.close()
    const synced = await w.alice.post(`/api/datasources/${created.body.id}/sync`, {})
    expect(synced.body).toMatchObject({ syncStatus: 'success', recordsProcessed: CHANGED.length })
    expect(await changeEvents(w, from)).toEqual(await byFullSync(afterChange()))
  })

  it('a webhook delivery outside a snapshot (updates, a create and a delete in one delivery)', async () => {
    const { w, deliver } = await webhookWorld()
    const from = await lastSeq(w)
    await deliver([
      { event: 'data.updated', data: CHANGED.filter((p) => p.id !== 'p4') },
      { event: 'data.created', data: CHANGED.filter((p) => p.id === 'p4') },
      { event: 'data.deleted', data: { id: 'p2' } },
    ])
    expect(await changeEvents(w, from)).toEqual(await byFullSync(afterChange(['p2'])))
  })

  it('a webhook snapshot, at its sync.completed', async () => {
    const { w, deliver } = await webhookWorld()
    const from = await lastSeq(w)
    await deliver({ event: 'sync.started' })
    await deliver({ event: 'data.created', data: afterChange(['p2']) })
    // Nothing moves before the snapshot completes: its generation is not visible yet.
    expect(await changeEvents(w, from)).toEqual([])
    await deliver({ event: 'sync.completed' })
    expect(await changeEvents(w, from)).toEqual(await byFullSync(afterChange(['p2'])))
  })

  it('a FHIR Subscription notification (updates, a create and a DELETE in one full-resource notification)', async () => {
    const fx = await startSubscriptionServer()
    let target: World | undefined
    const relay = await startRelay(() => (request) => target!.t.app.request(request))
    try {
      const w = await world(false, { PUBLIC_BASE_URL: relay.url })
      target = w
      for (const p of BEFORE) fx.put({ resourceType: 'Patient', ...p })
      const created = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
        type: 'fhir',
        config: {
          baseUrl: fx.baseUrl,
          resourceType: 'Patient',
          subscription: { topic: 'http://example.org/SubscriptionTopic/ward', payload: 'full-resource' },
        },
      })
      expect(created.body.syncStatus).toBe('success')
      await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
      const from = await lastSeq(w)
      const [sent] = await fx.batch(
        CHANGED.map((p) => ({ resourceType: 'Patient', ...p })),
        [{ type: 'Patient', id: 'p2' }],
      )
      expect(sent).toMatchObject({ status: 200, body: { applied: CHANGED.length + 1 } })
      expect(await changeEvents(w, from)).toEqual(await byFullSync(afterChange(['p2'])))
    } finally {
      await relay.close()
      await fx.close()
    }
  })

  it('a source deleted (its rows leave as when a sync reads none of them)', async () => {
    const w = await world()
    served.patients = BEFORE
    const created = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${api.url}/patients`, keyField: 'id' },
    })
    const from = await lastSeq(w)
    expect((await w.alice.delete(`/api/datasources/${created.body.id}`)).status).toBe(204)
    const deleted = await changeEvents(w, from)
    expect(deleted.map((e) => [e.type, e.id])).toEqual([
      ['panel.rows_changed', undefined],
      ['row.left', 'p1'],
      ['row.left', 'p2'],
      ['row.left', 'p5'],
    ])
    expect(deleted).toEqual(await byFullSync([]))
  })

  it('an import (inserts and updates of rows matched by their unique Id)', async () => {
    const w = await world()
    const config = (options: Record<string, unknown>) => ({
      format: 'json',
      mapping: [
        { sourceField: 'id', targetColumn: 'Id' },
        { sourceField: 'name', targetColumn: 'Name' },
        { sourceField: 'age', targetColumn: 'Age' },
      ],
      options,
      validation: { uniqueFields: ['Id'] },
    })
    expect((await importRows(w.t, w.panelId, config({}), BEFORE)).body).toMatchObject({ rowsImported: BEFORE.length })
    const from = await lastSeq(w)
    const res = await importRows(w.t, w.panelId, config({ updateExisting: true }), CHANGED)
    expect(res.body).toMatchObject({ rowsImported: 1, rowsUpdated: 3, rowsRejected: 0 })
    expect(await changeEvents(w, from)).toEqual(await byFullSync(afterChange()))
  })
})
