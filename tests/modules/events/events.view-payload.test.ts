import { beforeAll, describe, expect, it } from 'vitest'
import type { TestClient } from '../../helpers/http.ts'
import { type EventsWorld, eventsWorld, headOf } from './fixtures.ts'

/**
 * Every `view.*` event carries the view exactly as `GET /api/views/{id}` answers it (issue 20 item
 * 4; docs/live.md): consumers keep their copy of the view from these events. Checked for each write
 * that emits one: create (the first evaluation), update, sorts, filters, publish, unpublish, a new
 * cohort rule, a new column the view shows, and the end of a publication at its expiresAt.
 */

let w: EventsWorld

beforeAll(async () => {
  w = await eventsWorld()
})

interface FeedEvent {
  seq: number
  type: string
  viewId?: number
  data: { view?: Record<string, unknown>; [key: string]: unknown }
}

/** The view.* events of `viewId` after `after`, read by the panel's owner. */
async function viewEventsAfter(after: number, viewId: number): Promise<FeedEvent[]> {
  const page = await w.bob.get(`/api/events?after=${after}&limit=100`)
  expect(page.status).toBe(200)
  return (page.body.events as FeedEvent[]).filter((e) => e.type.startsWith('view.') && e.viewId === viewId)
}

/** Runs `act`, then expects exactly one view event of `type` whose view deep-equals GET as `reader`. */
async function expectEventAsGet(viewId: number, type: string, act: () => Promise<unknown>, reader: TestClient = w.bob) {
  const start = await headOf(w.t, 'tenant-a')
  await act()
  const events = await viewEventsAfter(start, viewId)
  expect(events.map((e) => e.type)).toEqual([type])
  const got = await reader.get(`/api/views/${viewId}`)
  expect(got.status).toBe(200)
  expect(events[0].data.view).toEqual(got.body)
  return events[0]
}

describe('view.* events carry the view as GET /api/views/{id} answers it', () => {
  let viewId = 0

  it('on create: the first evaluation', async () => {
    expect(
      (await w.bob.post(`/api/panels/${w.bobPanelId}/columns/base`, { name: 'Age', type: 'number', sourceField: 'age' })).status,
    ).toBe(201)
    const start = await headOf(w.t, 'tenant-a')
    const created = await w.bob.post('/api/views', {
      name: 'Over 65',
      description: 'the elderly',
      panelId: w.bobPanelId,
      filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 65 }],
      config: { columns: ['Age'], groupBy: [], layout: 'table' },
      metadata: { colour: 'red' },
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    viewId = created.body.id
    const events = await viewEventsAfter(start, viewId)
    expect(events.map((e) => e.type)).toEqual(['view.updated'])
    expect(events[0].data.membership).toBe('evaluated')
    const got = await w.bob.get(`/api/views/${viewId}`)
    expect(events[0].data.view).toEqual(got.body)
    expect(events[0].data.view).toMatchObject({ filters: created.body.filters, config: created.body.config, isPublished: false })
  })

  it('on update, sorts and filters', async () => {
    await expectEventAsGet(viewId, 'view.updated', () =>
      w.bob.put(`/api/views/${viewId}`, {
        name: 'Over 70',
        filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 70 }],
      }),
    )
    await expectEventAsGet(viewId, 'view.updated', () =>
      w.bob.put(`/api/views/${viewId}/sorts`, { sorts: [{ columnName: 'Age', direction: 'desc', order: 0 }] }),
    )
    await expectEventAsGet(viewId, 'view.updated', () =>
      w.bob.put(`/api/views/${viewId}/filters`, { filters: [{ columnName: 'Age', operator: 'lessThan', value: 90 }] }),
    )
  })

  it('on a new cohort rule and a new column the view shows (its re-evaluation)', async () => {
    const cohort = await expectEventAsGet(viewId, 'view.updated', () =>
      w.bob.put(`/api/panels/${w.bobPanelId}`, {
        cohortRule: { conditions: [{ field: 'Age', operator: 'greaterThan', value: 18 }], logic: 'AND' },
      }),
    )
    expect(cohort.data.membership).toBe('evaluated')
    await w.bob.put(`/api/views/${viewId}`, { config: { columns: ['Age', 'Ward'] } })
    const column = await expectEventAsGet(viewId, 'view.updated', () =>
      w.bob.post(`/api/panels/${w.bobPanelId}/columns/base`, { name: 'Ward', type: 'text', sourceField: 'ward' }),
    )
    expect(column.data.membership).toBe('evaluated')
  })

  it('on publish (as a reader sees it) and unpublish', async () => {
    await expectEventAsGet(
      viewId,
      'view.published',
      () =>
        w.bob.post(`/api/views/${viewId}/publish`, {
          publishConfig: { permissions: ['read'], userGroups: [], publishedTitle: 'Elderly list', description: 'for the ward' },
        }),
      w.alice,
    )
    await expectEventAsGet(viewId, 'view.updated', () => w.bob.post(`/api/views/${viewId}/unpublish`, {}))
  })

  it('on the end of a publication at its expiresAt', async () => {
    const expiresAt = new Date(w.t.clock.now().getTime() + 60_000).toISOString()
    expect(
      (await w.bob.post(`/api/views/${viewId}/publish`, { publishConfig: { permissions: ['read'], userGroups: [], expiresAt } }))
        .status,
    ).toBe(200)
    w.t.clock.advance(120_000)
    const event = await expectEventAsGet(viewId, 'view.updated', () => w.bob.get(`/api/views/${viewId}`))
    expect(event.data).toMatchObject({ reason: 'publishConfig.expiresAt', view: { isPublished: false, publishedAt: null } })
  })
})
