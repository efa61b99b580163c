import { beforeAll, describe, expect, it } from 'vitest'
import { append, type EventsWorld, eventsWorld, headOf, panelEvents } from './fixtures.ts'

let w: EventsWorld

beforeAll(async () => {
  w = await eventsWorld()
})

describe('GET /api/events', () => {
  it('pages oldest first with after/limit; lastSeq and hasMore say where to go on', async () => {
    const start = await headOf(w.t, 'tenant-a')
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 5))
    const first = await w.alice.get(`/api/events?after=${start}&limit=2`)
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body.events.map((e: { seq: number }) => e.seq)).toEqual([start + 1, start + 2])
    expect(first.body).toMatchObject({ lastSeq: start + 2, hasMore: true })
    const e = first.body.events[0]
    expect(e).toEqual({
      id: String(start + 1),
      seq: start + 1,
      type: 'panel.rows_changed',
      tenantId: 'tenant-a',
      occurredAt: '2026-01-01T12:00:00.000Z',
      panelId: w.panelId,
      data: { n: 1 },
    })
    const second = await w.alice.get(`/api/events?after=${first.body.lastSeq}&limit=2`)
    expect(second.body.events.map((x: { data: { n: number } }) => x.data.n)).toEqual([3, 4])
    expect(second.body.hasMore).toBe(true)
    const last = await w.alice.get(`/api/events?after=${second.body.lastSeq}&limit=2`)
    expect(last.body.events.map((x: { data: { n: number } }) => x.data.n)).toEqual([5])
    expect(last.body).toMatchObject({ lastSeq: start + 5, hasMore: false })
    // Nothing new: the cursor stays where it is, so a client keeps polling from it.
    const empty = await w.alice.get(`/api/events?after=${last.body.lastSeq}`)
    expect(empty.body).toEqual({ events: [], lastSeq: start + 5, hasMore: false })
  })

  it('without after starts at the oldest retained event; limit defaults to 100', async () => {
    const all = await w.ada.get('/api/events')
    expect(all.status).toBe(200)
    expect(all.body.events[0].seq).toBe(1)
    expect(all.body.events.length).toBeLessThanOrEqual(100)
  })

  it('lastSeq moves over events the caller may not read when nothing readable follows', async () => {
    const start = await headOf(w.t, 'tenant-a')
    await append(w.t, 'tenant-a', panelEvents(w.bobPanelId, 3))
    const page = await w.alice.get(`/api/events?after=${start}`)
    expect(page.body).toEqual({ events: [], lastSeq: start + 3, hasMore: false })
    // A filter on top: what it leaves out is skipped too, as the page saw the whole log.
    await append(w.t, 'tenant-a', [{ type: 'view.updated', panelId: w.panelId, viewId: w.privateViewId, data: {} }])
    const filtered = await w.alice.get(`/api/events?after=${start}&types=row.entered`)
    expect(filtered.body).toEqual({ events: [], lastSeq: start + 4, hasMore: false })
  })

  it('filters by types, panelId and viewId', async () => {
    const start = await headOf(w.t, 'tenant-a')
    await append(w.t, 'tenant-a', [
      { type: 'row.entered', panelId: w.panelId, viewId: w.publishedViewId, data: { rowId: 1 } },
      { type: 'row.left', panelId: w.panelId, viewId: w.privateViewId, data: { rowId: 2 } },
      { type: 'panel.rows_changed', panelId: w.panelId, data: { inserted: 1 } },
      { type: 'row.updated', panelId: w.panelId, viewId: w.publishedViewId, data: { rowId: 3 } },
    ])
    const types = await w.alice.get(`/api/events?after=${start}&types=row.entered,row.left`)
    expect(types.body.events.map((e: { type: string }) => e.type)).toEqual(['row.entered', 'row.left'])
    const byView = await w.alice.get(`/api/events?after=${start}&viewId=${w.publishedViewId}`)
    expect(byView.body.events.map((e: { data: { rowId: number } }) => e.data.rowId)).toEqual([1, 3])
    const byPanel = await w.alice.get(`/api/events?after=${start}&panelId=${w.panelId}&types=panel.rows_changed`)
    expect(byPanel.body.events).toHaveLength(1)
    expect(byPanel.body.events[0].viewId).toBeUndefined()
  })

  it('answers 400 in the error shape for a bad cursor, limit or type', async () => {
    for (const query of [
      'after=abc',
      'after=-1',
      'after=1.5',
      'limit=0',
      'limit=1001',
      'limit=x',
      'types=row.entered,nope',
      'viewId=0',
    ]) {
      const res = await w.alice.get(`/api/events?${query}`)
      expect(res.status, query).toBe(400)
      expect(res.body).toMatchObject({ statusCode: 400, code: 'VALIDATION_ERROR', error: 'Validation Error' })
      expect(Array.isArray(res.body.details), query).toBe(true)
    }
    const named = await w.alice.get('/api/events?types=nope')
    expect(JSON.stringify(named.body.details)).toContain('nope')
  })

  it("answers 403 for another tenant's tenantId in the query", async () => {
    const res = await w.alice.get('/api/events?tenantId=tenant-b')
    expect(res.status).toBe(403)
    expect(res.body.code).toBe('TENANT_ACCESS_DENIED')
  })
})

describe('GET /api/views/{id}/events and GET /api/panels/{panelId}/events', () => {
  it("answer only the path's view or panel", async () => {
    const start = await headOf(w.t, 'tenant-a')
    await append(w.t, 'tenant-a', [
      { type: 'row.entered', panelId: w.panelId, viewId: w.publishedViewId, data: { rowId: 10 } },
      { type: 'row.entered', panelId: w.panelId, viewId: w.privateViewId, data: { rowId: 11 } },
      { type: 'panel.rows_changed', panelId: w.panelId, data: { inserted: 2 } },
      { type: 'panel.rows_changed', panelId: w.bobPanelId, data: { inserted: 5 } },
    ])
    const view = await w.alice.get(`/api/views/${w.publishedViewId}/events?after=${start}`)
    expect(view.status).toBe(200)
    expect(view.body.events.map((e: { data: { rowId: number } }) => e.data.rowId)).toEqual([10])
    expect(view.body.lastSeq).toBe(start + 4)
    const panel = await w.alice.get(`/api/panels/${w.panelId}/events?after=${start}`)
    expect(panel.body.events.map((e: { seq: number }) => e.seq)).toEqual([start + 1, start + 2, start + 3])
    const paged = await w.alice.get(`/api/panels/${w.panelId}/events?after=${start}&limit=1&types=row.entered`)
    expect(paged.body).toMatchObject({ lastSeq: start + 1, hasMore: true })
  })

  it('answer 400 for a bad id, 404 in the error shape for an unknown one', async () => {
    expect((await w.alice.get('/api/views/abc/events')).status).toBe(400)
    const missing = await w.alice.get('/api/views/99999/events')
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({ code: 'NOT_FOUND', error: 'View not found', statusCode: 404 })
    const panel = await w.alice.get('/api/panels/99999/events')
    expect(panel.status).toBe(404)
    expect(panel.body).toMatchObject({ code: 'NOT_FOUND', error: 'Panel not found' })
  })
})

describe('view changes write their events', () => {
  it('view.updated, view.published and view.deleted, each with the change', async () => {
    const start = await headOf(w.t, 'tenant-a')
    const created = await w.bob.post('/api/views', { name: 'Temp', panelId: w.bobPanelId })
    const id = created.body.id
    expect((await w.bob.put(`/api/views/${id}`, { name: 'Renamed' })).status).toBe(200)
    expect((await w.bob.post(`/api/views/${id}/publish`, {})).status).toBe(200)
    expect((await w.bob.delete(`/api/views/${id}`)).status).toBe(204)
    const page = await w.bob.get(`/api/events?after=${start}`)
    // The first is the new view's first evaluation (LIVE.md: one view.updated, no row.entered).
    expect(page.body.events.map((e: { type: string }) => e.type)).toEqual([
      'view.updated',
      'view.updated',
      'view.published',
      'view.deleted',
    ])
    expect(page.body.events[0]).toMatchObject({ viewId: id, data: { membership: 'evaluated' } })
    expect(page.body.events[1]).toMatchObject({ viewId: id, panelId: w.bobPanelId, data: { view: { id, name: 'Renamed' } } })
    expect(page.body.events[2].data.view.isPublished).toBe(true)
    expect(page.body.events[3].data).toEqual({ id })
    // The deleted view's events stay readable by its panel's owner, not by others of the tenant.
    const alice = await w.alice.get(`/api/events?after=${start}`)
    expect(alice.body.events).toEqual([])
  })
})
