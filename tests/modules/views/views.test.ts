import { beforeEach, describe, expect, it } from 'vitest'
import { createView, notificationsOf, type ViewsWorld, viewChanges, viewsWorld } from './fixtures.ts'

let w: ViewsWorld

beforeEach(async () => {
  w = await viewsWorld()
})

const paths = (res: { body: { details: { path: string }[] } }) => res.body.details.map((d) => d.path)

describe('POST /api/views', () => {
  it('creates an unpublished view with the documented defaults', async () => {
    const res = await w.alice.post('/api/views', { name: 'Over 65', panelId: w.panelId, tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      id: expect.any(Number),
      name: 'Over 65',
      description: '',
      panelId: w.panelId,
      userId: 'alice',
      tenantId: 'tenant-a',
      isPublished: false,
      publishedAt: null,
      publishedBy: null,
      publishConfig: null,
      // Since issue 12: the published view a copy derives from (none for a view created here).
      sourceViewId: null,
      config: { columns: [], groupBy: [], layout: 'table' },
      metadata: {},
      filters: [],
      sorting: [],
      columnVisibility: {},
      aggregations: [],
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
      accessedAt: null,
      panel: { id: w.panelId, name: 'Diabetes' },
    })
  })

  it('stores the reference fields, keeps extra config keys and operator aliases as sent', async () => {
    const view = await createView(w.alice, w.panelId, {
      description: 'Elderly',
      config: { columns: ['Name', 'Age'], density: 'compact' },
      metadata: { color: 'blue' },
      filters: [
        { columnTitle: 'Age', operator: 'gte', value: 65, logicalOperator: 'AND' },
        { columnTitle: 'Sex', operator: 'in', value: ['F'], conditions: [{ columnTitle: 'Name', operator: 'isNotNull' }] },
      ],
      sorting: [{ columnTitle: 'Age', direction: 'desc', priority: 1, nullsFirst: true, customOrder: ['a'] }],
      columnVisibility: { Notes: false },
      aggregations: [{ columnTitle: 'Age', function: 'average', alias: 'Mean age' }],
    })
    expect(view.config).toEqual({ columns: ['Name', 'Age'], groupBy: [], layout: 'table', density: 'compact' })
    // Since issue 10 filters answer the spelling the request used (the web client's gte stays gte).
    expect(view.filters[0]).toEqual({ columnTitle: 'Age', operator: 'gte', value: 65, logicalOperator: 'AND' })
    expect(view.filters[1].conditions).toEqual([{ columnTitle: 'Name', operator: 'isNotNull' }])
    expect(view.sorting[0]).toEqual({ columnTitle: 'Age', direction: 'desc', priority: 1, nullsFirst: true, customOrder: ['a'] })
    expect(view.columnVisibility).toEqual({ Notes: false })
    expect(view.aggregations).toEqual([{ columnTitle: 'Age', function: 'average', alias: 'Mean age' }])
    const fetched = await w.alice.get(`/api/views/${view.id}`)
    expect(fetched.body).toEqual(view)
  })

  it('records a CREATE change for the view on its panel', async () => {
    const view = await createView(w.alice, w.panelId)
    const [change] = await viewChanges(w.t, 'tenant-a', view.id)
    expect(change).toMatchObject({ panelId: w.panelId, entityType: 'View', action: 'CREATE', userId: 'alice' })
    expect(change.changes.name).toEqual({ newValue: 'My view' })
  })

  it('rejects a missing name, a bad panelId type, a bad operator, a bad direction and a bad aggregation', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ panelId: w.panelId }, 'name'],
      [{ name: '', panelId: w.panelId }, 'name'],
      [{ name: 'x', panelId: 'abc' }, 'panelId'],
      [{ name: 'x', panelId: w.panelId, filters: [{ columnTitle: 'Age', operator: 'like', value: 1 }] }, 'filters.0.operator'],
      [{ name: 'x', panelId: w.panelId, sorting: [{ columnTitle: 'Age', direction: 'up' }] }, 'sorting.0.direction'],
      [{ name: 'x', panelId: w.panelId, aggregations: [{ columnTitle: 'Age', function: 'mode' }] }, 'aggregations.0.function'],
      [{ name: 'x', panelId: w.panelId, filters: [{ columnTitle: 'Age', operator: 'between', value: 3 }] }, 'filters.0.value'],
      [{ name: 'x', panelId: w.panelId, config: { columns: 'Age' } }, 'config.columns'],
    ]
    for (const [body, path] of cases) {
      const res = await w.alice.post('/api/views', body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body).toMatchObject({ error: 'Validation Error', code: 'VALIDATION_ERROR' })
      expect(paths(res)).toContain(path)
    }
  })

  it('enforces the limits: 50 filters, 20 sorts, 20 aggregations, 5 nesting levels', async () => {
    const many = (n: number, f: (i: number) => unknown) => Array.from({ length: n }, (_, i) => f(i))
    const filter = (i: number) => ({ columnTitle: `c${i}`, operator: 'equals', value: i })
    expect((await w.alice.post('/api/views', { name: 'x', panelId: w.panelId, filters: many(51, filter) })).status).toBe(400)
    expect((await w.alice.post('/api/views', { name: 'x', panelId: w.panelId, filters: many(50, filter) })).status).toBe(201)
    const sorts = many(21, (i) => ({ columnTitle: `c${i}`, direction: 'asc' }))
    expect((await w.alice.post('/api/views', { name: 'x', panelId: w.panelId, sorting: sorts })).status).toBe(400)
    const aggs = many(21, (i) => ({ columnTitle: `c${i}`, function: 'count' }))
    expect((await w.alice.post('/api/views', { name: 'x', panelId: w.panelId, aggregations: aggs })).status).toBe(400)
    const nest = (depth: number): Record<string, unknown> =>
      depth === 1 ? filter(depth) : { ...filter(depth), conditions: [nest(depth - 1)] }
    expect((await w.alice.post('/api/views', { name: 'x', panelId: w.panelId, filters: [nest(5)] })).status).toBe(201)
    const deep = await w.alice.post('/api/views', { name: 'x', panelId: w.panelId, filters: [nest(6)] })
    expect(deep.status).toBe(400)
    expect(paths(deep)[0]).toMatch(/^filters\.0(\.conditions\.0)+\.conditions$/)
  })

  it("answers 404 for another user's panel and for a panel of another tenant", async () => {
    for (const panelId of [w.bobPanelId, w.evePanelId, 999]) {
      const res = await w.alice.post('/api/views', { name: 'x', panelId })
      expect(res.status).toBe(404)
      expect(res.body.error).toBe('Panel not found')
    }
  })

  it('ignores unknown fields', async () => {
    const view = await createView(w.alice, w.panelId, { id: 999, isPublished: true, evil: 1 })
    expect(view.id).not.toBe(999)
    expect(view.isPublished).toBe(false)
    expect(view).not.toHaveProperty('evil')
  })
})

describe('GET /api/views', () => {
  it("lists own views and other users' published views once, newest update first", async () => {
    const own1 = await createView(w.alice, w.panelId, { name: 'own 1' })
    w.t.clock.advance(1000)
    const own2 = await createView(w.alice, w.panelId, { name: 'own 2' })
    w.t.clock.advance(1000)
    const bobPublished = await createView(w.bob, w.bobPanelId, { name: 'bob published' })
    await w.bob.post(`/api/views/${bobPublished.id}/publish`, {})
    const bobPrivate = await createView(w.bob, w.bobPanelId, { name: 'bob private' })
    w.t.clock.advance(1000)
    await w.alice.post(`/api/views/${own1.id}/publish`, {})
    const res = await w.alice.get('/api/views?tenantId=tenant-a&userId=alice')
    expect(res.status).toBe(200)
    expect(res.body.total).toBe(3)
    expect(res.body.views.map((v: { id: number }) => v.id)).toEqual([own1.id, bobPublished.id, own2.id])
    expect(res.body.views.map((v: { id: number }) => v.id)).not.toContain(bobPrivate.id)
    expect(res.body.views[1].panel).toEqual({ id: w.bobPanelId, name: 'Cardio' })
  })

  it('filters by panelId and by published', async () => {
    const a = await createView(w.alice, w.panelId)
    const b = await createView(w.bob, w.bobPanelId)
    await w.bob.post(`/api/views/${b.id}/publish`, {})
    const ids = async (q: string) => (await w.alice.get(`/api/views?${q}`)).body.views.map((v: { id: number }) => v.id)
    expect(await ids(`panelId=${w.bobPanelId}`)).toEqual([b.id])
    expect(await ids('published=true')).toEqual([b.id])
    expect(await ids('published=false')).toEqual([a.id])
  })

  it('pages with limit and offset while total counts every match', async () => {
    for (let i = 0; i < 3; i++) {
      await createView(w.alice, w.panelId, { name: `v${i}` })
      w.t.clock.advance(1000)
    }
    const res = await w.alice.get('/api/views?limit=2&offset=1')
    expect(res.body.total).toBe(3)
    expect(res.body.views.map((v: { name: string }) => v.name)).toEqual(['v1', 'v0'])
  })

  it('never shows views of a deleted panel', async () => {
    await createView(w.alice, w.panelId)
    await w.alice.delete(`/api/panels/${w.panelId}`, {})
    const res = await w.alice.get('/api/views')
    expect(res.body).toEqual({ views: [], total: 0 })
  })

  it('rejects bad query values, naming them', async () => {
    const res = await w.alice.get('/api/views?published=yes&panelId=abc')
    expect(res.status).toBe(400)
    expect(paths(res).sort()).toEqual(['query.panelId', 'query.published'])
  })
})

describe('GET /api/views/{id}', () => {
  it('returns the own view, with or without tenant query', async () => {
    const view = await createView(w.alice, w.panelId)
    expect((await w.alice.get(`/api/views/${view.id}`)).body).toEqual(view)
    expect((await w.alice.get(`/api/views/${view.id}?tenantId=tenant-a&userId=alice`)).body).toEqual(view)
  })

  it("is 404 for another user's unpublished view and 200 once it is published", async () => {
    const view = await createView(w.alice, w.panelId)
    const hidden = await w.bob.get(`/api/views/${view.id}`)
    expect(hidden.status).toBe(404)
    expect(hidden.body).toMatchObject({ error: 'View not found', message: `View ${view.id} not found for tenant tenant-a` })
    await w.alice.post(`/api/views/${view.id}/publish`)
    const shown = await w.bob.get(`/api/views/${view.id}`)
    expect(shown.status).toBe(200)
    expect(shown.body.panel).toEqual({ id: w.panelId, name: 'Diabetes' })
  })

  it('answers 400 for a non-integer id', async () => {
    expect((await w.alice.get('/api/views/abc')).status).toBe(400)
  })

  it('shows the new value after a PUT and a panel rename (cache invalidated)', async () => {
    const view = await createView(w.alice, w.panelId)
    await w.alice.get(`/api/views/${view.id}`)
    await w.alice.put(`/api/views/${view.id}`, { name: 'Renamed view' })
    await w.alice.put(`/api/panels/${w.panelId}`, { name: 'Renamed panel' })
    const res = await w.alice.get(`/api/views/${view.id}`)
    expect(res.body.name).toBe('Renamed view')
    expect(res.body.panel).toEqual({ id: w.panelId, name: 'Renamed panel' })
  })

  it('is 404 once the panel is deleted, even when the view was cached', async () => {
    const view = await createView(w.alice, w.panelId)
    await w.alice.get(`/api/views/${view.id}`)
    await w.alice.delete(`/api/panels/${w.panelId}`)
    expect((await w.alice.get(`/api/views/${view.id}`)).status).toBe(404)
  })
})

describe('PUT /api/views/{id}', () => {
  it('merges the given fields, shallow-merging config, and records the diff', async () => {
    const view = await createView(w.alice, w.panelId, { config: { columns: ['Age'], groupBy: ['Sex'], density: 'x' } })
    w.t.clock.advance(5000)
    const res = await w.alice.put(`/api/views/${view.id}`, {
      description: 'new',
      config: { layout: 'cards' },
      filters: [{ columnTitle: 'Age', operator: 'lt', value: 18 }],
      tenantId: 'tenant-a',
      userId: 'alice',
    })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      name: 'My view',
      description: 'new',
      config: { columns: ['Age'], groupBy: ['Sex'], layout: 'cards', density: 'x' },
      filters: [{ columnTitle: 'Age', operator: 'lt', value: 18 }],
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:05.000Z',
    })
    const changes = await viewChanges(w.t, 'tenant-a', view.id)
    expect(changes.at(-1)).toMatchObject({ action: 'UPDATE', panelId: w.panelId, userId: 'alice' })
    expect(Object.keys(changes.at(-1)?.changes ?? {}).sort()).toEqual(['config', 'description', 'filters'])
    expect(changes.at(-1)?.changes.description).toEqual({ oldValue: '', newValue: 'new' })
  })

  it('writes nothing when nothing changes', async () => {
    const view = await createView(w.alice, w.panelId)
    w.t.clock.advance(1000)
    const res = await w.alice.put(`/api/views/${view.id}`, { name: 'My view' })
    expect(res.body.updatedAt).toBe(view.updatedAt)
    expect(await viewChanges(w.t, 'tenant-a', view.id)).toHaveLength(1)
  })

  it('notifies the other users of the tenant when the view is published, never the actor', async () => {
    const view = await createView(w.alice, w.panelId)
    await w.alice.put(`/api/views/${view.id}`, { name: 'Private edit' })
    expect(await notificationsOf(w.t, 'tenant-a')).toHaveLength(0)
    await w.alice.post(`/api/views/${view.id}/publish`)
    await w.alice.put(`/api/views/${view.id}`, { name: 'Public edit' })
    const updated = (await notificationsOf(w.t, 'tenant-a')).filter((n) => n.type === 'VIEW_UPDATED')
    expect(updated).toHaveLength(1)
    expect(updated[0]).toMatchObject({ userId: 'bob', viewId: view.id, impact: 'info', isRead: false })
    expect(updated[0].message).toContain('Public edit')
    expect(await notificationsOf(w.t, 'tenant-b')).toHaveLength(0)
  })

  it('rejects invalid fields, naming them', async () => {
    const view = await createView(w.alice, w.panelId)
    const res = await w.alice.put(`/api/views/${view.id}`, {
      name: '',
      sorting: [{ columnTitle: 'Age', direction: 'sideways' }],
      columnVisibility: { Age: 'yes' },
    })
    expect(res.status).toBe(400)
    expect(paths(res).sort()).toEqual(['columnVisibility.Age', 'name', 'sorting.0.direction'])
  })

  it("answers 404 for another user's unpublished view and 403 for their published one", async () => {
    const view = await createView(w.alice, w.panelId)
    expect((await w.bob.put(`/api/views/${view.id}`, { name: 'hijack' })).status).toBe(404)
    await w.alice.post(`/api/views/${view.id}/publish`)
    const res = await w.bob.put(`/api/views/${view.id}`, { name: 'hijack' })
    expect(res.status).toBe(403)
    // Since issue 12 the refusal names the missing permission (renaming needs `manage`).
    expect(res.body).toMatchObject({ error: 'Forbidden', code: 'FORBIDDEN', details: { permission: 'manage' } })
    expect((await w.alice.get(`/api/views/${view.id}`)).body.name).toBe('My view')
  })
})

describe('DELETE /api/views/{id}', () => {
  it('deletes the own view with a DELETE change', async () => {
    const view = await createView(w.alice, w.panelId)
    await w.alice.get(`/api/views/${view.id}`)
    const res = await w.alice.delete(`/api/views/${view.id}`, { tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(204)
    expect(res.body).toBeNull()
    expect((await w.alice.get(`/api/views/${view.id}`)).status).toBe(404)
    expect((await w.alice.get('/api/views')).body.total).toBe(0)
    const changes = await viewChanges(w.t, 'tenant-a', view.id)
    expect(changes.at(-1)).toMatchObject({ action: 'DELETE', panelId: w.panelId })
    expect((await w.alice.delete(`/api/views/${view.id}`)).status).toBe(404)
  })

  it('is owner only: 404 when unpublished, 403 when published', async () => {
    const view = await createView(w.alice, w.panelId)
    expect((await w.bob.delete(`/api/views/${view.id}`)).status).toBe(404)
    await w.alice.post(`/api/views/${view.id}/publish`)
    expect((await w.bob.delete(`/api/views/${view.id}`)).status).toBe(403)
    expect((await w.alice.get(`/api/views/${view.id}`)).status).toBe(200)
  })
})
