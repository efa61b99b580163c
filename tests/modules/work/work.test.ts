import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientFor } from '../../helpers/http.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Working a row (WORKLIST.md §3; docs/worklist.md): one row with its work state and ETag, PATCH
 * with If-Match, claim, release, next, the workflow — and who may do what.
 */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

const row = (id: number) => `/api/panels/${w.panelId}/rows/${id}`

describe('a row and its work state', () => {
  it('answers the row with _work and an ETag; another tenant gets 404', async () => {
    const res = await w.alice.get(row(w.ids.p1))
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ _id: w.ids.p1, _key: 'p1', Name: 'Ada' })
    expect(res.body._work).toMatchObject({ status: 'open', assignee: null, version: 0, commentCount: 0 })
    expect(res.headers.get('etag')).toBe('"0"')
    expect((await w.eve.get(`/api/panels/${w.panelId}/rows/${w.ids.p1}`)).status).toBe(404)
    expect((await w.alice.get(row(999999))).status).toBe(404)
  })

  it('PATCH changes the status with If-Match; a stale If-Match is a 412 with the current state', async () => {
    const first = await w.alice.patch(`${row(w.ids.p2)}/work`, { status: 'in_progress' }, { 'if-match': '"0"' })
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body._work).toMatchObject({ status: 'in_progress', version: 1, updatedBy: 'alice' })
    expect(first.headers.get('etag')).toBe('"1"')
    const stale = await w.alice.patch(`${row(w.ids.p2)}/work`, { status: 'done' }, { 'if-match': '"0"' })
    expect(stale.status).toBe(412)
    expect(stale.body.code).toBe('PRECONDITION_FAILED')
    expect(stale.body.details).toMatchObject({ status: 'in_progress', version: 1 })
    const malformed = await w.alice.patch(`${row(w.ids.p2)}/work`, { status: 'done' }, { 'if-match': 'three' })
    expect(malformed.status).toBe(400)
    const unknown = await w.alice.patch(`${row(w.ids.p2)}/work`, { status: 'bogus' })
    expect(unknown.status).toBe(400)
    expect(JSON.stringify(unknown.body.details)).toContain('status')
    const past = await w.alice.patch(`${row(w.ids.p2)}/work`, { snoozedUntil: '2000-01-01T00:00:00Z' })
    expect(past.status).toBe(400)
    const badTime = await w.alice.patch(`${row(w.ids.p2)}/work`, { dueAt: 'tomorrow' })
    expect(badTime.status).toBe(400)
    // Nothing was partially applied.
    expect((await w.alice.get(row(w.ids.p2))).body._work).toMatchObject({ status: 'in_progress', version: 1 })
  })

  it('claims, answers 409 naming the holder to someone else, renews the own claim, and releases', async () => {
    const claim = await w.alice.post(`${row(w.ids.p3)}/claim`, { leaseSeconds: 600 })
    expect(claim.status, JSON.stringify(claim.body)).toBe(200)
    expect(claim.body._work).toMatchObject({ assignee: 'alice' })
    expect(claim.body._work.claimExpiresAt).not.toBeNull()
    const admin = clientFor(w.t.app, 'tenant-a', 'root', { role: 'admin' })
    const taken = await admin.post(`${row(w.ids.p3)}/claim`, {})
    expect(taken.status).toBe(409)
    expect(taken.body.details).toMatchObject({ assignee: 'alice' })
    const renewed = await w.alice.post(`${row(w.ids.p3)}/claim`, {})
    expect(renewed.status).toBe(200)
    const released = await w.alice.post(`${row(w.ids.p3)}/release`, {})
    expect(released.status).toBe(200)
    expect(released.body._work).toMatchObject({ assignee: null, claimExpiresAt: null })
    expect((await w.alice.post(`${row(w.ids.p3)}/claim`, { leaseSeconds: 5 })).status).toBe(400)
  })

  it('appends row.work_updated with the fields that changed, and a change record', async () => {
    await w.alice.patch(`${row(w.ids.p4)}/work`, { dueAt: '2030-01-01T00:00:00Z' })
    const events = await w.t.client.execute({
      sql: "SELECT data FROM events WHERE tenant_id = 'tenant-a' AND type = 'row.work_updated' ORDER BY seq DESC LIMIT 1",
      args: [],
    })
    const data = JSON.parse(String(events.rows[0].data))
    expect(data).toMatchObject({
      rowId: w.ids.p4,
      key: 'p4',
      panelId: w.panelId,
      by: 'alice',
      cause: 'patch',
      changed: { dueAt: { from: null, to: '2030-01-01T00:00:00.000Z' } },
      work: { dueAt: '2030-01-01T00:00:00.000Z', version: 1 },
    })
    const changes = await w.t.client.execute({
      sql: "SELECT changes FROM changes WHERE tenant_id = 'tenant-a' AND entity_type = 'row' AND entity_id = ? ORDER BY id DESC LIMIT 1",
      args: [w.ids.p4],
    })
    expect(JSON.parse(String(changes.rows[0].changes))).toEqual({
      dueAt: { oldValue: null, newValue: '2030-01-01T00:00:00.000Z' },
    })
  })
})

describe('next', () => {
  it('claims the first free row of the view, then the next, then answers 204', async () => {
    const view = await w.alice.post('/api/views', {
      name: 'Queue',
      panelId: w.panelId,
      filters: [{ columnTitle: 'City', operator: 'equals', value: 'London' }],
      sorting: [{ columnTitle: 'Age', direction: 'asc' }],
    })
    expect(view.status).toBe(201)
    const first = await w.alice.post(`/api/views/${view.body.id}/next`, {})
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body).toMatchObject({ Name: 'Zoe', _work: { assignee: 'alice' } })
    const second = await w.alice.post(`/api/views/${view.body.id}/next`, {})
    expect(second.body).toMatchObject({ Name: 'Ada' })
    const none = await w.alice.post(`/api/views/${view.body.id}/next`, {})
    expect(none.status).toBe(204)
  })
})

describe('workflow', () => {
  it('answers the defaults, stores a new one, refuses an unknown patient column and a held status', async () => {
    const got = await w.alice.get(`/api/panels/${w.panelId}/workflow`)
    expect(got.status).toBe(200)
    expect(got.body.statuses.map((s: { value: string }) => s.value)).toEqual(['open', 'in_progress', 'done'])
    const workflow = {
      statuses: [
        { value: 'open', label: 'Open', done: false },
        { value: 'in_progress', label: 'In progress', done: false },
        { value: 'called', label: 'Called', done: true },
      ],
      sla: { dueAfter: 'PT48H' },
      claimLeaseSeconds: 900,
      patientReference: 'Name',
    }
    // p2 is in_progress (above): removing it is refused.
    const held = await w.alice.put(`/api/panels/${w.panelId}/workflow`, {
      ...workflow,
      statuses: workflow.statuses.filter((s) => s.value !== 'in_progress'),
    })
    expect(held.status).toBe(409)
    const put = await w.alice.put(`/api/panels/${w.panelId}/workflow`, workflow)
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    expect((await w.alice.get(`/api/panels/${w.panelId}/workflow`)).body).toEqual(workflow)
    expect((await w.alice.put(`/api/panels/${w.panelId}/workflow`, { ...workflow, patientReference: 'Nope' })).status).toBe(400)
    expect((await w.alice.put(`/api/panels/${w.panelId}/workflow`, { ...workflow, sla: { dueAfter: 'P1M' } })).status).toBe(400)
    expect((await w.bob.get(`/api/panels/${w.panelId}/workflow`)).status).toBe(404)
  })
})

describe('a deleted panel', () => {
  it('takes the work state and comments of its rows with it', async () => {
    const { t, alice } = w
    const panel = await alice.post('/api/panels', { name: 'Doomed', tenantId: 'tenant-a', userId: 'alice' })
    const source = await alice.post(`/api/panels/${panel.body.id}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${w.server.url}/patients`, keyField: 'id' },
      tenantId: 'tenant-a',
      userId: 'alice',
    })
    expect(source.body.syncStatus, JSON.stringify(source.body)).toBe('success')
    const [{ id }] = (
      await t.client.execute({ sql: 'SELECT row_id AS id FROM records WHERE panel_id = ? LIMIT 1', args: [panel.body.id] })
    ).rows as unknown as { id: number }[]
    expect((await alice.post(`/api/panels/${panel.body.id}/rows/${id}/claim`, {})).status).toBe(200)
    expect((await alice.delete(`/api/panels/${panel.body.id}`)).status).toBe(204)
    const left = await t.client.execute({
      sql: 'SELECT count(*) AS n FROM row_identities WHERE panel_id = ?',
      args: [panel.body.id],
    })
    expect(Number(left.rows[0].n)).toBe(0)
  })
})

describe('an expired claim', () => {
  it('reads as free at once, and anyone with edit may claim the row', async () => {
    const { t, alice } = w
    expect((await alice.post(`${row(w.ids.p6)}/claim`, { leaseSeconds: 10 })).status).toBe(200)
    t.clock.advance(11_000)
    const read = await alice.get(row(w.ids.p6))
    expect(read.body._work).toMatchObject({ assignee: null, claimExpiresAt: null })
    const admin = clientFor(t.app, 'tenant-a', 'root', { role: 'admin' })
    const taken = await admin.post(`${row(w.ids.p6)}/claim`, {})
    expect(taken.status).toBe(200)
    expect(taken.body._work).toMatchObject({ assignee: 'root' })
  })
})
