import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { eventData } from '../../../src/rowstore/event-json.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'

/**
 * The row store's write path and the change feed (LIVE.md): every write moves view membership in
 * its own batch and appends exactly the events of what moved.
 */

interface Patient {
  id: string
  name: string
  age: number | string | null
}

let server: FixtureServer
const state = { patients: [] as Patient[], failFrom: 0 }

beforeAll(async () => {
  server = await startJsonServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const page = Number(url.searchParams.get('page') ?? 1)
    if (url.pathname === '/paged') {
      if (state.failFrom > 0 && page >= state.failFrom) return sendJson(res, 500, { message: 'gone half-way' })
      return sendJson(res, 200, { items: state.patients.slice((page - 1) * 2, page * 2) })
    }
    return sendJson(res, 200, state.patients)
  })
})
afterAll(() => server.close())

let t: TestApp
let alice: TestClient
let carol: TestClient
let panelId: number
let viewId: number
let sourceId: number

interface FeedEvent {
  seq: number
  type: string
  panel_id: number | null
  view_id: number | null
  data_source_id: number | null
  data: Record<string, any>
}

async function events(after = 0): Promise<FeedEvent[]> {
  const rows = await t.deps.db.all<FeedEvent & { data: string }>(
    sql`SELECT seq, type, panel_id, view_id, data_source_id, data FROM events WHERE tenant_id = 'tenant-a' AND seq > ${after} ORDER BY seq`,
  )
  // As readers answer them (a row.updated's `changed` from its stored `previous`).
  return rows.map((r) => ({ ...r, data: eventData(r.type, JSON.parse(r.data as unknown as string)) }))
}
const lastSeq = async () => (await events()).at(-1)?.seq ?? 0
const sync = async (who: TestClient = carol) => {
  const res = await who.post(`/api/datasources/${sourceId}/sync`, {})
  return res.body as { syncStatus: string; errorMessage: string | null }
}
const viewRows = async () => (await alice.get(`/api/views/${viewId}/rows?limit=100`)).body.data as Record<string, unknown>[]
const members = async () =>
  (await t.deps.db.all<{ key: string }>(sql`SELECT key FROM view_members WHERE view_id = ${viewId} ORDER BY key`)).map(
    (m) => m.key,
  )

beforeEach(async () => {
  state.patients = [
    { id: 'p1', name: 'Ada', age: 40 },
    { id: 'p2', name: 'Grace', age: 45 },
    { id: 'p3', name: 'Alan', age: 20 },
  ]
  state.failFrom = 0
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  carol = clientFor(t.app, 'tenant-a', 'carol', { role: 'admin' })
  panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  for (const column of [
    { name: 'Name', sourceField: 'name' },
    { name: 'Age', sourceField: 'age', type: 'number' },
  ]) {
    expect((await alice.post(`/api/panels/${panelId}/columns/base`, column)).status).toBe(201)
  }
  viewId = (
    await alice.post('/api/views', {
      name: 'Over 30',
      panelId,
      filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
    })
  ).body.id
  const created = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${server.url}/patients`, keyField: 'id' },
  })
  expect(created.body.syncStatus).toBe('success')
  sourceId = created.body.id
})

describe('a full sync', () => {
  it('appends row.entered for each row entering a view, as the view shows it, then panel.rows_changed and sync.completed', async () => {
    const log = await events()
    expect(log.map((e) => [e.seq, e.type])).toEqual([
      [1, 'view.updated'],
      [2, 'row.entered'],
      [3, 'row.entered'],
      [4, 'panel.rows_changed'],
      [5, 'sync.completed'],
    ])
    const shown = await viewRows()
    expect(log[1]).toMatchObject({ panel_id: panelId, view_id: viewId, data_source_id: sourceId })
    expect(log.slice(1, 3).map((e) => e.data)).toEqual([
      { rowId: shown[0]._id, key: 'p1', row: shown[0] },
      { rowId: shown[1]._id, key: 'p2', row: shown[1] },
    ])
    expect(shown[0]).toEqual({ _id: shown[0]._id, _key: 'p1', _source: sourceId, Name: 'Ada', Age: 40 })
    expect(log[3].data).toEqual({ inserted: 3, updated: 0, deleted: 0, cause: 'sync' })
    const runs = (await alice.get(`/api/datasources/${sourceId}/sync-runs`)).body
    const run = runs.syncRuns[0]
    expect(log[4]).toMatchObject({ type: 'sync.completed', panel_id: panelId, data_source_id: sourceId, data: run })
    expect(await members()).toEqual(['p1', 'p2'])
  })

  it('appends row.updated with what changed, row.left with the last values shown, and nothing for rows that did not move', async () => {
    const before = await lastSeq()
    const p2Before = (await viewRows())[1]
    state.patients = [
      { id: 'p1', name: 'Ada', age: 41 },
      { id: 'p2', name: 'Grace', age: 10 },
      { id: 'p3', name: 'Alan', age: 33 },
      { id: 'p5', name: 'Edsger', age: 50 },
    ]
    expect((await sync()).syncStatus).toBe('success')
    const log = await events(before)
    const shown = await viewRows()
    expect(log.map((e) => [e.type, e.data.key ?? null])).toEqual([
      ['row.left', 'p2'],
      ['row.entered', 'p3'],
      ['row.entered', 'p5'],
      ['row.updated', 'p1'],
      ['panel.rows_changed', null],
      ['sync.completed', null],
    ])
    expect(log[0].data).toEqual({ rowId: p2Before._id, key: 'p2', row: p2Before })
    const p1 = shown.find((r) => r.Name === 'Ada')
    expect(log[3].data).toEqual({ rowId: p1?._id, key: 'p1', row: p1, changed: { Age: { from: 40, to: 41 } } })
    // The feed answers it the same way (the log stores the row before; readers derive `changed`).
    const page = await alice.get(`/api/views/${viewId}/events?after=${before}&types=row.updated`)
    expect(page.body.events.map((e: { data: unknown }) => e.data)).toEqual([log[3].data])
    expect(log[4].data).toEqual({ inserted: 1, updated: 3, deleted: 0, cause: 'sync' })
    expect(await members()).toEqual(['p1', 'p3', 'p5'])
    // The view's owner hears it once (Carol synced).
    const notices = await t.client.execute(`SELECT message FROM notifications WHERE user_id = 'alice' AND type = 'DATA_CHANGED'`)
    expect(notices.rows.map((r) => r.message)).toContain('View "Over 30": 2 rows entered, 1 left (sync)')
  })

  it('a sync that changes nothing appends only its sync.completed', async () => {
    const before = await lastSeq()
    expect((await sync()).syncStatus).toBe('success')
    expect((await events(before)).map((e) => e.type)).toEqual(['sync.completed'])
  })

  it('keeps "", 0, false-y and type changes apart: a number turning into "" is a change', async () => {
    const before = await lastSeq()
    state.patients = [
      { id: 'p1', name: '', age: 40 },
      { id: 'p2', name: 'Grace', age: 45 },
      { id: 'p3', name: 'Alan', age: 20 },
    ]
    await sync()
    const [updated] = (await events(before)).filter((e) => e.type === 'row.updated')
    expect(updated.data.changed).toEqual({ Name: { from: 'Ada', to: '' } })
  })

  it('that fails half-way emits no row event and changes no row: only sync.failed', async () => {
    await t.deps.db.run(
      sql`UPDATE data_sources SET config = json_set(config, '$.apiEndpoint', ${`${server.url}/paged`}, '$.paginationStyle', 'page',
        '$.pageSize', 2, '$.retryAttempts', 0) WHERE id = ${sourceId}`,
    )
    const rowsBefore = await viewRows()
    const before = await lastSeq()
    state.patients = [
      { id: 'p1', name: 'Ada', age: 10 },
      { id: 'p2', name: 'Grace', age: 10 },
      { id: 'p3', name: 'Alan', age: 90 },
      { id: 'p4', name: 'Bob', age: 90 },
    ]
    state.failFrom = 2
    const result = await sync()
    expect(result.syncStatus).toBe('error')
    const log = await events(before)
    expect(log.map((e) => e.type)).toEqual(['sync.failed'])
    expect(log[0].data).toMatchObject({ status: 'error', dataSourceId: sourceId })
    expect(await viewRows()).toEqual(rowsBefore)
    expect(await members()).toEqual(['p1', 'p2'])
    expect((await t.deps.db.all(sql`SELECT * FROM pending_changes`)).length).toBe(0)
  })
})

describe('membership stays exact', () => {
  it('entered minus left equals the view’s row count after any sequence of writes', async () => {
    const sequences: Patient[][] = [
      [{ id: 'p1', name: 'A', age: 31 }],
      [
        { id: 'p1', name: 'A', age: 29 },
        { id: 'p2', name: 'B', age: 99 },
        { id: 'p3', name: 'C', age: 30 },
      ],
      [],
      [
        { id: 'p4', name: 'D', age: 30 },
        { id: 'p5', name: 'E', age: null },
        { id: 'p6', name: 'F', age: '' },
      ],
      [
        { id: 'p4', name: 'D', age: 31 },
        { id: 'p1', name: 'A', age: 70 },
      ],
    ]
    for (const patients of sequences) {
      state.patients = patients
      expect((await sync()).syncStatus).toBe('success')
      const log = await events()
      const entered = log.filter((e) => e.type === 'row.entered' && e.view_id === viewId).length
      const left = log.filter((e) => e.type === 'row.left' && e.view_id === viewId).length
      const rows = await viewRows()
      expect(entered - left).toBe(rows.length)
      expect(await members()).toEqual(
        rows
          .map((r) => patients.find((p) => p.name === r.Name)?.id)
          .filter(Boolean)
          .sort(),
      )
    }
  })

  it('a changed filter re-evaluates the view silently: one view.updated, no row events', async () => {
    const before = await lastSeq()
    expect(
      (await alice.put(`/api/views/${viewId}`, { filters: [{ columnTitle: 'Age', operator: 'lessThan', value: 30 }] })).status,
    ).toBe(200)
    const log = await events(before)
    expect(log.map((e) => e.type)).toEqual(['view.updated'])
    expect(log[0].data.view).toMatchObject({ id: viewId, filters: [{ columnTitle: 'Age', operator: 'lessThan', value: 30 }] })
    expect(await members()).toEqual(['p3'])
    // The next sync moves from the new membership.
    state.patients = [
      { id: 'p1', name: 'Ada', age: 12 },
      { id: 'p2', name: 'Grace', age: 45 },
    ]
    const mark = await lastSeq()
    await sync()
    expect((await events(mark)).map((e) => [e.type, e.data.key ?? null])).toEqual([
      ['row.left', 'p3'],
      ['row.entered', 'p1'],
      ['panel.rows_changed', null],
      ['sync.completed', null],
    ])
  })

  it('a deleted source’s rows leave every view; a deleted view appends view.deleted and drops its members', async () => {
    const before = await lastSeq()
    expect((await alice.delete(`/api/datasources/${sourceId}`)).status).toBe(204)
    const log = await events(before)
    expect(log.map((e) => [e.type, e.data.key ?? null])).toEqual([
      ['row.left', 'p1'],
      ['row.left', 'p2'],
      ['panel.rows_changed', null],
    ])
    expect(log[2].data).toEqual({ inserted: 0, updated: 0, deleted: 3, cause: 'delete' })
    expect((await alice.delete(`/api/views/${viewId}`)).status).toBe(204)
    expect((await events(log.at(-1)?.seq)).map((e) => [e.type, e.data])).toEqual([['view.deleted', { id: viewId }]])
    expect(await t.deps.db.all(sql`SELECT * FROM view_members WHERE view_id = ${viewId}`)).toEqual([])
  })

  it('a column change recomputes rows and appends row.updated for the values a view shows', async () => {
    const calc = await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Older', formula: '{Age} + 1' })
    expect(calc.status).toBe(201)
    // The new column changes the view's columns: it is re-evaluated (view.updated), not every row updated.
    const log1 = await events()
    expect(log1.filter((e) => e.type === 'row.updated')).toEqual([])
    const before = await lastSeq()
    expect((await alice.put(`/api/columns/${calc.body.id}`, { formula: '{Age} + 2' })).status).toBe(200)
    const log = (await events(before)).filter((e) => e.type === 'row.updated')
    expect(log.map((e) => [e.data.key, e.data.changed])).toEqual([
      ['p1', { Older: { from: 41, to: 42 } }],
      ['p2', { Older: { from: 46, to: 47 } }],
    ])
    expect((await events(before)).find((e) => e.type === 'panel.rows_changed')?.data).toEqual({
      inserted: 0,
      updated: 3,
      deleted: 0,
      cause: 'recompute',
    })
  })
})

describe('the generation digest', () => {
  const digestOf = async () =>
    (await t.deps.db.all<{ d: string | null }>(sql`SELECT generation_digest AS d FROM data_sources WHERE id = ${sourceId}`))[0].d

  it('lets an unchanged full sync skip the comparison, and is forgotten when rows are rewritten in place', async () => {
    const first = await digestOf()
    expect(first).toMatch(/^3:[0-9a-f]{16}$/)
    await sync()
    expect(await digestOf()).toBe(first)
    // A recompute rewrites cells in place: the digest no longer describes the generation.
    const calc = await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Twice', formula: '{Age} * 2' })
    expect(calc.status).toBe(201)
    expect(await digestOf()).toBeNull()
    // The next sync compares row by row (nothing moved), then digests its generation again.
    const before = await lastSeq()
    await sync()
    expect((await events(before)).map((e) => e.type)).toEqual(['sync.completed'])
    expect(await digestOf()).toMatch(/^3:/)
    expect(await digestOf()).not.toBe(first)
    // A changed row changes the digest, so its moves are found.
    state.patients = [{ id: 'p1', name: 'Ada', age: 10 }, ...state.patients.slice(1)]
    const mark = await lastSeq()
    await sync()
    expect((await events(mark)).map((e) => [e.type, e.data.key ?? null])).toEqual([
      ['row.left', 'p1'],
      ['panel.rows_changed', null],
      ['sync.completed', null],
    ])
  })

  it('does not depend on the order rows come in', async () => {
    const { GenerationDigest } = await import('../../../src/rowstore/digest.ts')
    const a = new GenerationDigest()
    const b = new GenerationDigest()
    a.add('k1', '{"1":1}', 'null')
    a.add('k2', '{"1":2}', 'null')
    b.add('k2', '{"1":2}', 'null')
    b.add('k1', '{"1":1}', 'null')
    expect(a.toString()).toBe(b.toString())
    const c = new GenerationDigest()
    c.add('k1', '{"1":2}', 'null')
    c.add('k2', '{"1":1}', 'null')
    expect(c.toString()).not.toBe(a.toString())
  })
})
