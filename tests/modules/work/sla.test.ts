import { createHmac } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'

/**
 * The SLA (WORKLIST.md §2 "SLA"; docs/worklist.md "Time rules"): with `sla.dueAfter`, a row whose
 * identity has no `dueAt` gets `dueAt = the time of the write that first brought it into the panel
 * + dueAfter`, in that write's batch — a work change of cause `sla` the views see at once. A row
 * that comes back, or was there before the SLA, gets none.
 */

interface FeedEvent {
  seq: number
  type: string
  view_id: number | null
  data: Record<string, any>
}

const HOUR = 3_600_000
const SECRET = 'sla-webhook-secret'
const served = { patients: [] as { id: string; name: string }[] }

let server: FixtureServer
beforeAll(async () => {
  server = await startJsonServer((_req, res) => sendJson(res, 200, served.patients))
})
afterAll(() => server.close())

let t: TestApp
let alice: TestClient
let panelId: number
let viewId: number

async function events(after = 0): Promise<FeedEvent[]> {
  const rows = await t.deps.db.all<Omit<FeedEvent, 'data'> & { data: string }>(
    sql`SELECT seq, type, view_id, data FROM events WHERE tenant_id = 'tenant-a' AND seq > ${after} ORDER BY seq`,
  )
  return rows.map((r) => ({
    ...r,
    seq: Number(r.seq),
    view_id: r.view_id === null ? null : Number(r.view_id),
    data: JSON.parse(r.data),
  }))
}
const lastSeq = async () => (await events()).at(-1)?.seq ?? 0
const at = (ms = 0) => new Date(t.clock.now().getTime() + ms).toISOString()
/** The identities of the panel by key: due date, version, entry time. */
async function identities(): Promise<
  Record<string, { dueAt: string | null; version: number; enteredAt: string | null; id: number }>
> {
  const rows = await t.deps.db.all<{
    id: number
    key: string
    due_at: string | null
    version: number
    entered_at: string | null
  }>(sql`SELECT id, key, due_at, version, entered_at FROM row_identities WHERE panel_id = ${panelId}`)
  return Object.fromEntries(
    rows.map((r) => [r.key, { id: Number(r.id), dueAt: r.due_at, version: Number(r.version), enteredAt: r.entered_at }]),
  )
}
const slaEvents = (log: FeedEvent[]) => log.filter((e) => e.type === 'row.work_updated' && e.data.cause === 'sla')

async function addApiSource() {
  const created = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${server.url}/patients`, keyField: 'id' },
  })
  expect(created.body.syncStatus, JSON.stringify(created.body)).toBe('success')
  return created.body.id as number
}
const sync = async (sourceId: number) =>
  expect((await alice.post(`/api/datasources/${sourceId}/sync`, {})).body.syncStatus).toBe('success')
const putSla = async (dueAfter: string | null) => {
  const res = await alice.put(`/api/panels/${panelId}/workflow`, {
    statuses: [
      { value: 'open', label: 'Open', done: false },
      { value: 'done', label: 'Done', done: true },
    ],
    sla: dueAfter === null ? null : { dueAfter },
    claimLeaseSeconds: null,
    patientReference: null,
  })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}

beforeEach(async () => {
  served.patients = [
    { id: 'p1', name: 'Ada' },
    { id: 'p2', name: 'Grace' },
  ]
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  expect((await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Name', sourceField: 'name' })).status).toBe(201)
  const view = await alice.post('/api/views', { name: 'Due', panelId, config: { columns: ['Name', '_dueAt'] } })
  expect(view.status).toBe(201)
  viewId = view.body.id
})

describe('a panel with an SLA', () => {
  it('gives rows entering with a full sync dueAt = the write time + dueAfter, as a work change the views see', async () => {
    await putSla('PT48H')
    const t0 = at()
    const before = await lastSeq()
    await addApiSource()
    const ids = await identities()
    const due = new Date(Date.parse(t0) + 48 * HOUR).toISOString()
    expect(ids.p1).toMatchObject({ dueAt: due, version: 1, enteredAt: t0 })
    expect(ids.p2).toMatchObject({ dueAt: due, version: 1, enteredAt: t0 })
    const log = await events(before)
    const sla = slaEvents(log)
    expect(sla.map((e) => e.data.key).sort()).toEqual(['p1', 'p2'])
    expect(sla[0].data).toMatchObject({
      by: 'system',
      changed: { dueAt: { from: null, to: due } },
      work: { dueAt: due, version: 1 },
    })
    // The view saw the due date as the rows entered it.
    const entered = log.filter((e) => e.view_id === viewId && e.type === 'row.entered')
    expect(entered.map((e) => e.data.row._dueAt)).toEqual([due, due])
    const shown = (await alice.get(`/api/views/${viewId}/rows`)).body.data
    expect(shown.map((r: { _dueAt: string }) => r._dueAt)).toEqual([due, due])
    const changes = await t.deps.db.all<{ user_id: string; changes: string }>(
      sql`SELECT user_id, changes FROM changes WHERE entity_type = 'row' AND entity_id = ${ids.p1.id}`,
    )
    expect(changes).toHaveLength(1)
    expect(changes[0].user_id).toBe('system')
    expect(JSON.parse(changes[0].changes)).toEqual({ dueAt: { oldValue: null, newValue: due } })
    expect((await alice.get(`/api/panels/${panelId}/rows/${ids.p1.id}`)).body._work).toMatchObject({ dueAt: due, version: 1 })
  })

  it('counts from the write that brought each row in; a resync, a row that comes back or a cleared dueAt get none', async () => {
    await putSla('P1D')
    const sourceId = await addApiSource()
    const first = await identities()
    t.clock.advance(HOUR)
    served.patients = [...served.patients, { id: 'p3', name: 'Alan' }]
    const before = await lastSeq()
    await sync(sourceId)
    const second = await identities()
    expect(second.p3).toMatchObject({ dueAt: at(24 * HOUR), version: 1, enteredAt: at() })
    expect(second.p1).toEqual(first.p1)
    expect(slaEvents(await events(before)).map((e) => e.data.key)).toEqual(['p3'])
    // p1's due date cleared by hand; p1 leaves the source and comes back.
    expect((await alice.patch(`/api/panels/${panelId}/rows/${first.p1.id}/work`, { dueAt: null })).status).toBe(200)
    const kept = served.patients
    served.patients = kept.filter((p) => p.id !== 'p1')
    await sync(sourceId)
    t.clock.advance(HOUR)
    served.patients = kept
    const back = await lastSeq()
    await sync(sourceId)
    expect((await identities()).p1).toMatchObject({ id: first.p1.id, dueAt: null, version: 2, enteredAt: first.p1.enteredAt })
    const log = await events(back)
    expect(slaEvents(log)).toEqual([])
    expect(log.some((e) => e.type === 'row.entered' && e.data.key === 'p1')).toBe(true)
  })

  it('gives rows a webhook delivery brings in their dueAt in the delivery’s batch', async () => {
    await putSla('PT2H')
    const res = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'webhook',
      config: { endpoint: 'sla-ward', secret: SECRET, keyField: 'id', events: ['data.created', 'data.updated'] },
    })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    t.clock.advance(HOUR)
    const raw = JSON.stringify({ event: 'data.created', data: [{ id: 'w1', name: 'Edsger' }] })
    const sent = await t.app.request('/api/webhooks/sla-ward', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-Signature-256': `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`,
      },
      body: raw,
    })
    expect(sent.status).toBe(200)
    expect((await identities()).w1).toMatchObject({ dueAt: at(2 * HOUR), enteredAt: at(), version: 1 })
  })

  it('the SLA due date then makes the row overdue at the scheduler step after it', async () => {
    await putSla('PT1H')
    await addApiSource()
    t.clock.advance(HOUR + 1)
    const before = await lastSeq()
    expect((await runMaintenanceTick(t.deps, t.clock.now())).time.overdue).toBe(2)
    expect(
      (await events(before))
        .filter((e) => e.type === 'row.overdue')
        .map((e) => e.data.key)
        .sort(),
    ).toEqual(['p1', 'p2'])
  })
})

describe('a panel without an SLA, or with one set later', () => {
  it('records when rows entered and sets no dueAt; rows entering after the SLA is set get one, the others not', async () => {
    const before = await lastSeq()
    const sourceId = await addApiSource()
    const t0 = at()
    const ids = await identities()
    expect(ids.p1).toMatchObject({ enteredAt: t0, dueAt: null, version: 0 })
    expect(slaEvents(await events(before))).toEqual([])
    await putSla('PT4H')
    t.clock.advance(HOUR)
    served.patients = [...served.patients, { id: 'p3', name: 'Alan' }]
    await sync(sourceId)
    const after = await identities()
    expect(after.p1).toEqual(ids.p1)
    expect(after.p2).toEqual(ids.p2)
    expect(after.p3).toMatchObject({ dueAt: at(4 * HOUR), enteredAt: at(), version: 1 })
  })
})
