import { beforeEach, describe, expect, it } from 'vitest'
import { createView, notificationsOf, type ViewsWorld, viewChanges, viewsWorld } from './fixtures.ts'

let w: ViewsWorld
let viewId: number

beforeEach(async () => {
  w = await viewsWorld()
  viewId = (
    await createView(w.alice, w.panelId, {
      sorting: [
        { columnTitle: 'Name', direction: 'asc' },
        { columnTitle: 'Age', direction: 'desc', nullsFirst: true, customOrder: ['x'] },
      ],
      filters: [
        { columnTitle: 'Age', operator: 'gt', value: 65 },
        {
          columnTitle: 'Sex',
          operator: 'in',
          value: ['F'],
          logicalOperator: 'OR',
          conditions: [{ columnTitle: 'Name', operator: 'isNotNull' }],
        },
      ],
    })
  ).id
})

describe('GET /api/views/{id}/sorts', () => {
  it("shows the view's sorting as records, order = position when no priority", async () => {
    const res = await w.alice.get(`/api/views/${viewId}/sorts?tenantId=tenant-a&userId=alice`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      sorts: [
        { id: 1, columnName: 'Name', direction: 'asc', order: 1 },
        { id: 2, columnName: 'Age', direction: 'desc', order: 2 },
      ],
    })
  })

  it('follows the view visibility: 404 for another user until published', async () => {
    expect((await w.bob.get(`/api/views/${viewId}/sorts`)).status).toBe(404)
    await w.alice.post(`/api/views/${viewId}/publish`)
    expect((await w.bob.get(`/api/views/${viewId}/sorts`)).body.sorts).toHaveLength(2)
  })
})

describe('PUT /api/views/{id}/sorts', () => {
  it('replaces the sorting, keeping nullsFirst/customOrder of a column sorted before, and round-trips', async () => {
    const sorts = [
      { columnName: 'Age', direction: 'asc', order: 1 },
      { columnName: 'City', direction: 'desc', order: 2 },
    ]
    const res = await w.alice.put(`/api/views/${viewId}/sorts`, { sorts, tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(200)
    const records = sorts.map((s, i) => ({ id: i + 1, ...s }))
    expect(res.body).toEqual({ sorts: records })
    expect((await w.alice.get(`/api/views/${viewId}/sorts`)).body).toEqual({ sorts: records })
    const view = (await w.alice.get(`/api/views/${viewId}`)).body
    expect(view.sorting).toEqual([
      { columnTitle: 'Age', direction: 'asc', priority: 1, nullsFirst: true, customOrder: ['x'] },
      { columnTitle: 'City', direction: 'desc', priority: 2 },
    ])
    const last = (await viewChanges(w.t, 'tenant-a', viewId)).at(-1)
    expect(last).toMatchObject({ action: 'UPDATE', panelId: w.panelId })
    expect(Object.keys(last?.changes ?? {})).toEqual(['sorting'])
  })

  it('writes nothing when the records read are sent back unchanged', async () => {
    const { sorts } = (await w.alice.get(`/api/views/${viewId}/sorts`)).body
    const res = await w.alice.put(`/api/views/${viewId}/sorts`, { sorts })
    expect(res.body).toEqual({ sorts })
    expect(await viewChanges(w.t, 'tenant-a', viewId)).toHaveLength(1)
    expect((await w.alice.get(`/api/views/${viewId}`)).body.sorting[0]).toEqual({ columnTitle: 'Name', direction: 'asc' })
  })

  it('lists the records by their order', async () => {
    const res = await w.alice.put(`/api/views/${viewId}/sorts`, {
      sorts: [
        { columnName: 'B', direction: 'asc', order: 2 },
        { columnName: 'A', direction: 'desc', order: 1 },
      ],
    })
    expect(res.body.sorts.map((s: { columnName: string }) => s.columnName)).toEqual(['A', 'B'])
  })

  it('rejects a bad direction, a missing columnName, duplicates and more than 20 sorts', async () => {
    const cases: [unknown, string][] = [
      [[{ columnName: 'Age', direction: 'up' }], 'sorts.0.direction'],
      [[{ direction: 'asc' }], 'sorts.0.columnName'],
      [
        [
          { columnName: 'Age', direction: 'asc' },
          { columnName: 'Age', direction: 'desc' },
        ],
        'sorts.1.columnName',
      ],
      [Array.from({ length: 21 }, (_, i) => ({ columnName: `c${i}`, direction: 'asc' })), 'sorts'],
      ['Age', 'sorts'],
    ]
    for (const [sorts, path] of cases) {
      const res = await w.alice.put(`/api/views/${viewId}/sorts`, { sorts })
      expect(res.status, path).toBe(400)
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path)
    }
  })

  it('is owner only: 404 unpublished, 403 published', async () => {
    const body = { sorts: [] }
    expect((await w.bob.put(`/api/views/${viewId}/sorts`, body)).status).toBe(404)
    await w.alice.post(`/api/views/${viewId}/publish`)
    expect((await w.bob.put(`/api/views/${viewId}/sorts`, body)).status).toBe(403)
    expect((await w.alice.get(`/api/views/${viewId}/sorts`)).body.sorts).toHaveLength(2)
  })
})

describe('GET /api/views/{id}/filters', () => {
  it("shows the view's filters with 1-based ids and operators as they were sent", async () => {
    const res = await w.alice.get(`/api/views/${viewId}/filters`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      filters: [
        { id: 1, columnName: 'Age', operator: 'gt', value: 65, logicalOperator: 'AND' },
        {
          id: 2,
          columnName: 'Sex',
          operator: 'in',
          value: ['F'],
          logicalOperator: 'OR',
          conditions: [{ columnTitle: 'Name', operator: 'isNotNull' }],
        },
      ],
    })
  })

  it('is 404 for another tenant', async () => {
    expect((await w.eve.get(`/api/views/${viewId}/filters`)).status).toBe(404)
  })
})

describe('PUT /api/views/{id}/filters', () => {
  it('replaces the filters (aliases kept as sent) and round-trips', async () => {
    const res = await w.alice.put(`/api/views/${viewId}/filters`, {
      filters: [
        { columnName: 'Age', operator: 'lte', value: 18 },
        { columnName: 'Email', operator: 'isEmpty', logicalOperator: 'OR' },
      ],
    })
    expect(res.status).toBe(200)
    const expected = {
      filters: [
        { id: 1, columnName: 'Age', operator: 'lte', value: 18, logicalOperator: 'AND' },
        { id: 2, columnName: 'Email', operator: 'isEmpty', value: null, logicalOperator: 'OR' },
      ],
    }
    expect(res.body).toEqual(expected)
    expect((await w.alice.get(`/api/views/${viewId}/filters`)).body).toEqual(expected)
    expect((await w.alice.get(`/api/views/${viewId}`)).body.filters).toEqual([
      { columnTitle: 'Age', operator: 'lte', value: 18 },
      { columnTitle: 'Email', operator: 'isEmpty', logicalOperator: 'OR' },
    ])
    expect((await viewChanges(w.t, 'tenant-a', viewId)).at(-1)?.changes).toHaveProperty('filters')
  })

  it('writes nothing when the filters are unchanged', async () => {
    const current = (await w.alice.get(`/api/views/${viewId}/filters`)).body.filters
    const filters = current.map(({ id: _id, ...f }: Record<string, unknown>) => f)
    const before = (await viewChanges(w.t, 'tenant-a', viewId)).length
    expect((await w.alice.put(`/api/views/${viewId}/filters`, { filters })).status).toBe(200)
    expect(await viewChanges(w.t, 'tenant-a', viewId)).toHaveLength(before)
  })

  it('notifies other users when the view is published', async () => {
    await w.alice.post(`/api/views/${viewId}/publish`)
    await w.alice.put(`/api/views/${viewId}/filters`, { filters: [] })
    const updated = (await notificationsOf(w.t, 'tenant-a')).filter((n) => n.type === 'VIEW_UPDATED')
    expect(updated.map((n) => n.userId)).toEqual(['bob'])
  })

  it('rejects a bad operator, a missing columnName and a bad logicalOperator, naming them', async () => {
    const res = await w.alice.put(`/api/views/${viewId}/filters`, {
      filters: [
        { columnName: 'Age', operator: 'approx', value: 1 },
        { operator: 'eq' },
        { columnName: 'x', operator: 'eq', logicalOperator: 'XOR' },
      ],
    })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'filters.0.operator',
      'filters.1.columnName',
      'filters.2.logicalOperator',
    ])
    expect((await w.alice.get(`/api/views/${viewId}/filters`)).body.filters).toHaveLength(2)
  })

  it('is owner only: 404 unpublished, 403 published', async () => {
    const body = { filters: [] }
    expect((await w.bob.put(`/api/views/${viewId}/filters`, body)).status).toBe(404)
    await w.alice.post(`/api/views/${viewId}/publish`)
    expect((await w.bob.put(`/api/views/${viewId}/filters`, body)).status).toBe(403)
  })
})
