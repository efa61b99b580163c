import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * The read audit of working a row (WORKLIST.md §4; docs/audit.md): a GET of one row, a claim and a
 * `next` are reads of that row — one access record each, naming the row (`query.rowId`) — and so
 * are a PATCH and a release, which answer the row too. A `next` with nothing left reads 0 rows.
 */

let w: RowsWorld
let admin: TestClient
let nina: TestClient
let viewId: number

beforeAll(async () => {
  w = await rowsWorld()
  admin = clientFor(w.t.app, 'tenant-a', 'root', { role: 'admin' })
  nina = clientFor(w.t.app, 'tenant-a', 'nina')
  const view = await w.alice.post('/api/views', {
    name: 'London',
    panelId: w.panelId,
    filters: [{ columnTitle: 'City', operator: 'equals', value: 'London' }],
    sorting: [{ columnTitle: 'Age', direction: 'asc' }],
  })
  viewId = view.body.id
  await w.alice.post(`/api/views/${viewId}/publish`, { publishConfig: { permissions: ['read', 'edit'], userGroups: [] } })
})
afterAll(() => w.server.close())
beforeEach(async () => {
  await w.t.client.execute('DELETE FROM access_records')
})

/** The tenant's access records as its admin reads them, oldest first. */
async function records() {
  const res = await admin.get('/api/audit?limit=100')
  expect(res.status).toBe(200)
  return [...res.body.records].reverse()
}

describe('reads of one row', () => {
  it('a GET of one row, under the panel and under a view, is a read of that row', async () => {
    expect((await w.alice.get(`/api/panels/${w.panelId}/rows/${w.ids.p1}`)).status).toBe(200)
    expect((await nina.get(`/api/views/${viewId}/rows/${w.ids.p5}`)).status).toBe(200)
    expect(await records()).toMatchObject([
      {
        userId: 'alice',
        action: 'read',
        panelId: w.panelId,
        viewId: null,
        rowCount: 1,
        query: { rowId: w.ids.p1 },
        path: `/api/panels/${w.panelId}/rows/${w.ids.p1}`,
        outcome: 'success',
        status: 200,
      },
      {
        userId: 'nina',
        action: 'read',
        panelId: w.panelId,
        viewId,
        rowCount: 1,
        query: { rowId: w.ids.p5 },
        outcome: 'success',
      },
    ])
  })

  it('a claim, a PATCH and a release are reads of that row', async () => {
    const base = `/api/views/${viewId}/rows/${w.ids.p1}`
    expect((await nina.post(`${base}/claim`, {})).status).toBe(200)
    expect((await nina.patch(`${base}/work`, { status: 'in_progress' })).status).toBe(200)
    expect((await nina.post(`${base}/release`, {})).status).toBe(200)
    const got = await records()
    expect(got.map((r) => r.path)).toEqual([`${base}/claim`, `${base}/work`, `${base}/release`])
    for (const r of got) {
      expect(r).toMatchObject({ userId: 'nina', action: 'read', panelId: w.panelId, viewId, rowCount: 1, outcome: 'success' })
      expect(r.query).toEqual({ rowId: w.ids.p1 })
    }
    await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p1}/work`, { status: 'open' })
  })

  it('a claim refused because someone holds the row reads nothing; a row the view does not show is a not_found', async () => {
    expect((await w.bob.post(`/api/views/${viewId}/rows/${w.ids.p5}/claim`, {})).status).toBe(200)
    await w.t.client.execute('DELETE FROM access_records')
    expect((await nina.post(`/api/views/${viewId}/rows/${w.ids.p5}/claim`, {})).status).toBe(409)
    expect((await nina.get(`/api/views/${viewId}/rows/${w.ids.p2}`)).status).toBe(404)
    expect(await records()).toMatchObject([
      { userId: 'nina', viewId, rowCount: 0, status: 409, errorCode: 'CONFLICT' },
      { userId: 'nina', viewId, rowCount: 0, outcome: 'not_found', status: 404, query: {} },
    ])
    await w.alice.post(`/api/panels/${w.panelId}/rows/${w.ids.p5}/release`, {})
  })
})

describe('next', () => {
  it('records the row it claimed, then 0 rows once none is left (204)', async () => {
    const first = await nina.post(`/api/views/${viewId}/next`, {})
    const second = await nina.post(`/api/views/${viewId}/next`, {})
    const none = await nina.post(`/api/views/${viewId}/next`, {})
    expect([first.status, second.status, none.status]).toEqual([200, 200, 204])
    expect(await records()).toMatchObject([
      { userId: 'nina', action: 'read', viewId, rowCount: 1, query: { rowId: first.body._id }, status: 200 },
      { userId: 'nina', action: 'read', viewId, rowCount: 1, query: { rowId: second.body._id }, status: 200 },
      { userId: 'nina', action: 'read', viewId, rowCount: 0, query: {}, outcome: 'success', status: 204 },
    ])
    for (const id of [first.body._id, second.body._id]) await w.alice.post(`/api/panels/${w.panelId}/rows/${id}/release`, {})
  })

  it('a next refused for want of edit is recorded as denied', async () => {
    const readOnly = await w.alice.post('/api/views', { name: 'Read only', panelId: w.panelId })
    await w.alice.post(`/api/views/${readOnly.body.id}/publish`, { publishConfig: { permissions: ['read'], userGroups: [] } })
    await w.t.client.execute('DELETE FROM access_records')
    expect((await nina.post(`/api/views/${readOnly.body.id}/next`, {})).status).toBe(403)
    expect(await records()).toMatchObject([{ userId: 'nina', viewId: readOnly.body.id, rowCount: 0, outcome: 'denied' }])
  })
})
