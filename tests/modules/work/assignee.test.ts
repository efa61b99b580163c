import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { idsOf, query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * `GET {rows}?assignee=me` and views filtering on `_assignee equals @me` (WORKLIST.md §2;
 * docs/worklist.md): each reader gets their own rows, user ids compared exactly.
 * Rows: tests/modules/rows/fixtures.ts PATIENTS (London: p1 Ada, p5 Zoe).
 */

let w: RowsWorld
let nina: TestClient
/** Another user, whose id differs from nina's only by case. */
let Nina: TestClient
let shared: number

beforeAll(async () => {
  w = await rowsWorld()
  nina = clientFor(w.t.app, 'tenant-a', 'nina')
  Nina = clientFor(w.t.app, 'tenant-a', 'Nina')
  // Every row, Name only (no _assignee column shown), shared for editing.
  const view = await w.alice.post('/api/views', { name: 'All', panelId: w.panelId, config: { columns: ['Name'] } })
  shared = view.body.id
  const pub = await w.alice.post(`/api/views/${shared}/publish`, {
    publishConfig: { permissions: ['read', 'edit'], userGroups: [] },
  })
  expect(pub.status).toBe(200)
  // alice: p1; nina: p2 and p5; Nina: p3; bob: p4, whose claim has expired by the time of the reads.
  const claims: [TestClient, string, number?][] = [
    [w.alice, 'p1'],
    [nina, 'p2'],
    [nina, 'p5'],
    [Nina, 'p3'],
    [w.bob, 'p4', 10],
  ]
  for (const [c, key, leaseSeconds] of claims) {
    const res = await c.post(`/api/views/${shared}/rows/${w.ids[key]}/claim`, leaseSeconds ? { leaseSeconds } : {})
    expect(res.status, JSON.stringify(res.body)).toBe(200)
  }
  w.t.clock.advance(60_000)
})
afterAll(() => w.server.close())

const panelRows = (q: Record<string, unknown>) => `/api/panels/${w.panelId}/rows${query({ sort: 'Name', ...q })}`
const viewRows = (id: number, q: Record<string, unknown> = {}) => `/api/views/${id}/rows${query({ sort: 'Name', ...q })}`

describe('?assignee=', () => {
  it('me (or @me) is the caller, on the panel’s rows and on a view’s', async () => {
    const mine = await w.alice.get(panelRows({ assignee: 'me' }))
    expect(mine.status, JSON.stringify(mine.body)).toBe(200)
    expect(idsOf(w, mine.body)).toEqual(['p1'])
    expect(idsOf(w, (await w.alice.get(panelRows({ assignee: '@me' }))).body)).toEqual(['p1'])
    expect(idsOf(w, (await nina.get(viewRows(shared, { assignee: 'me' }))).body)).toEqual(['p2', 'p5'])
    expect(idsOf(w, (await Nina.get(viewRows(shared, { assignee: 'me' }))).body)).toEqual(['p3'])
  })

  it('a user id is that user, compared exactly; an expired claim assigns nobody', async () => {
    expect(idsOf(w, (await w.alice.get(panelRows({ assignee: 'nina' }))).body)).toEqual(['p2', 'p5'])
    expect(idsOf(w, (await w.alice.get(panelRows({ assignee: 'Nina' }))).body)).toEqual(['p3'])
    expect(idsOf(w, (await w.alice.get(panelRows({ assignee: 'NINA' }))).body)).toEqual([])
    expect((await w.alice.get(panelRows({ assignee: 'bob' }))).body.meta.total).toBe(0)
    expect((await w.bob.get(viewRows(shared, { assignee: 'me' }))).body.meta.total).toBe(0)
  })

  it('is ANDed with the request’s filters', async () => {
    const london = [{ columnTitle: 'City', operator: 'equals', value: 'London' }]
    const res = await w.alice.get(panelRows({ assignee: 'nina', filters: london }))
    expect(idsOf(w, res.body)).toEqual(['p5'])
  })

  it('refuses an empty or overlong value with a 400 naming assignee', async () => {
    for (const assignee of ['', 'x'.repeat(256)]) {
      const res = await w.alice.get(`/api/panels/${w.panelId}/rows?assignee=${assignee}`)
      expect(res.status).toBe(400)
      expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['query.assignee'])
    }
  })
})

describe('a view whose filters use @me', () => {
  it('answers each reader their own rows, its owner included', async () => {
    const view = await w.alice.post('/api/views', {
      name: 'My rows',
      panelId: w.panelId,
      filters: [{ columnTitle: '_assignee', operator: 'equals', value: '@me' }],
      config: { columns: ['Name', '_assignee'] },
    })
    expect(view.status, JSON.stringify(view.body)).toBe(201)
    await w.alice.post(`/api/views/${view.body.id}/publish`, { publishConfig: { permissions: ['read'], userGroups: [] } })
    const read = async (c: TestClient) => {
      const res = await c.get(viewRows(view.body.id))
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body
    }
    expect(idsOf(w, await read(nina))).toEqual(['p2', 'p5'])
    expect((await read(nina)).data.map((r: { _assignee: string }) => r._assignee)).toEqual(['nina', 'nina'])
    expect(idsOf(w, await read(Nina))).toEqual(['p3'])
    expect(idsOf(w, await read(w.alice))).toEqual(['p1'])
    expect((await read(w.bob)).meta.total).toBe(0)
    // One row of it answers only its own reader.
    expect((await nina.get(`/api/views/${view.body.id}/rows/${w.ids.p2}`)).status).toBe(200)
    expect((await Nina.get(`/api/views/${view.body.id}/rows/${w.ids.p2}`)).status).toBe(404)
  })

  it('an `in` list with @me compares exactly too', async () => {
    const view = await w.alice.post('/api/views', {
      name: 'Mine and bob’s',
      panelId: w.panelId,
      filters: [{ columnTitle: '_assignee', operator: 'in', value: ['@me', 'alice'] }],
    })
    await w.alice.post(`/api/views/${view.body.id}/publish`, { publishConfig: { permissions: ['read'], userGroups: [] } })
    expect(idsOf(w, (await Nina.get(viewRows(view.body.id))).body)).toEqual(['p1', 'p3'])
  })
})
