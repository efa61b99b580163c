import { beforeAll, describe, expect, it } from 'vitest'
import { append, type EventsWorld, eventsWorld, headOf } from './fixtures.ts'

/**
 * Who reads which events (docs/live.md "Who reads what"), on every reader: the JSON page of the
 * tenant, the scoped paths, with and without filters. One batch of events of every scope is
 * appended in each tenant; each user's pages must hold exactly what they may read.
 */

let w: EventsWorld
let start: number
const names: Record<string, number> = {}

beforeAll(async () => {
  w = await eventsWorld()
  await append(w.t, 'tenant-b', [{ type: 'row.entered', panelId: w.evePanelId, viewId: w.eveViewId, data: { tag: 'eve-view' } }])
  start = await headOf(w.t, 'tenant-a')
  const list = [
    { type: 'row.entered' as const, panelId: w.panelId, viewId: w.privateViewId, data: { tag: 'private-view' } },
    { type: 'row.entered' as const, panelId: w.panelId, viewId: w.publishedViewId, data: { tag: 'published-view' } },
    { type: 'row.entered' as const, panelId: w.panelId, viewId: w.nursesViewId, data: { tag: 'nurses-view' } },
    { type: 'panel.rows_changed' as const, panelId: w.panelId, data: { tag: 'alice-panel' } },
    { type: 'panel.rows_changed' as const, panelId: w.bobPanelId, data: { tag: 'bob-panel' } },
    { type: 'sync.completed' as const, data: { tag: 'tenant-wide' } },
  ]
  list.forEach((e, i) => {
    names[e.data.tag] = start + i + 1
  })
  await append(w.t, 'tenant-a', list)
})

const tagsOf = (body: { events: { data: { tag: string } }[] }) => body.events.map((e) => e.data.tag)

describe('GET /api/events: what each caller reads', () => {
  it('the panel owner: her panel, her views (published or not); not another owner’s panel', async () => {
    const res = await w.alice.get(`/api/events?after=${start}`)
    expect(tagsOf(res.body)).toEqual(['private-view', 'published-view', 'nurses-view', 'alice-panel'])
  })

  it('another member: the published view, the group view only in the group, his own panel; never an unpublished view', async () => {
    expect(tagsOf((await w.bob.get(`/api/events?after=${start}`)).body)).toEqual(['published-view', 'bob-panel'])
    expect(tagsOf((await w.nina.get(`/api/events?after=${start}`)).body)).toEqual(['published-view', 'nurses-view'])
  })

  it('a tenant admin: every event of the tenant', async () => {
    expect(tagsOf((await w.ada.get(`/api/events?after=${start}`)).body)).toEqual([
      'private-view',
      'published-view',
      'nurses-view',
      'alice-panel',
      'bob-panel',
      'tenant-wide',
    ])
  })

  it("another tenant's user: only their own tenant's events, whatever the ids asked", async () => {
    const res = await w.eve.get('/api/events')
    expect(res.body.events.every((e: { tenantId: string }) => e.tenantId === 'tenant-b')).toBe(true)
    expect(tagsOf(res.body)).toContain('eve-view')
    const aimed = await w.eve.get(`/api/events?viewId=${w.publishedViewId}&panelId=${w.panelId}`)
    expect(aimed.body.events).toEqual([])
  })

  it('filters never widen: bob asking for the private view or alice’s panel gets nothing of them', async () => {
    expect((await w.bob.get(`/api/events?after=${start}&viewId=${w.privateViewId}`)).body.events).toEqual([])
    expect(tagsOf((await w.bob.get(`/api/events?after=${start}&panelId=${w.panelId}`)).body)).toEqual(['published-view'])
  })
})

describe('scoped paths: who may open them', () => {
  it('a view path: 404 for an unpublished view of another user and for another tenant’s view', async () => {
    for (const [c, id] of [
      [w.bob, w.privateViewId],
      [w.bob, w.nursesViewId],
      [w.eve, w.publishedViewId],
      [w.alice, w.eveViewId],
    ] as const) {
      const res = await c.get(`/api/views/${id}/events`)
      expect(res.status, `${c.userId} → view ${id}`).toBe(404)
      expect(res.body.code).toBe('NOT_FOUND')
    }
  })

  it('a view path: readers of the view get its events', async () => {
    expect(tagsOf((await w.bob.get(`/api/views/${w.publishedViewId}/events?after=${start}`)).body)).toEqual(['published-view'])
    expect(tagsOf((await w.nina.get(`/api/views/${w.nursesViewId}/events?after=${start}`)).body)).toEqual(['nurses-view'])
    expect(tagsOf((await w.ada.get(`/api/views/${w.privateViewId}/events?after=${start}`)).body)).toEqual(['private-view'])
  })

  it('a panel path: only its owner (and admins); others, other tenants: 404', async () => {
    expect((await w.bob.get(`/api/panels/${w.panelId}/events`)).status).toBe(404)
    expect((await w.eve.get(`/api/panels/${w.panelId}/events`)).status).toBe(404)
    expect((await w.alice.get(`/api/panels/${w.evePanelId}/events`)).status).toBe(404)
    const own = await w.alice.get(`/api/panels/${w.panelId}/events?after=${start}`)
    expect(tagsOf(own.body)).toEqual(['private-view', 'published-view', 'nurses-view', 'alice-panel'])
    expect(tagsOf((await w.ada.get(`/api/panels/${w.bobPanelId}/events?after=${start}`)).body)).toEqual(['bob-panel'])
  })

  it('401 without a token', async () => {
    for (const path of ['/api/events', `/api/views/${w.publishedViewId}/events`, `/api/panels/${w.panelId}/events`]) {
      expect((await w.t.app.request(path)).status, path).toBe(401)
    }
  })

  it('unpublishing takes the view’s events away from other members at once', async () => {
    const view = await w.alice.post('/api/views', { name: 'Soon private', panelId: w.panelId })
    const id = view.body.id
    await w.alice.post(`/api/views/${id}/publish`, { publishConfig: { permissions: ['read'], userGroups: [] } })
    const from = await headOf(w.t, 'tenant-a')
    await append(w.t, 'tenant-a', [{ type: 'row.entered', panelId: w.panelId, viewId: id, data: { tag: 'x' } }])
    expect(tagsOf((await w.bob.get(`/api/events?after=${from}`)).body)).toEqual(['x'])
    await w.alice.post(`/api/views/${id}/unpublish`, {})
    expect(tagsOf((await w.bob.get(`/api/events?after=${from}`)).body)).toEqual([])
    expect((await w.bob.get(`/api/views/${id}/events`)).status).toBe(404)
  })
})
