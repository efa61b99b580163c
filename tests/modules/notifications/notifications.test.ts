import { eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { notifications, views } from '../../../src/db/schema.ts'
import { createPanel, deletePanel } from '../../../src/modules/panels/panels.service.ts'
import { makeTestApp, serviceCtx, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient
let panelId: number
let viewId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(serviceCtx(t.deps, 'tenant-a', 'bob'), { name: 'Diabetes', tenantId: 'tenant-a', userId: 'bob' }))
    .id
  viewId = await seedView('tenant-a', 'bob', panelId, 'Open cases')
})

const MINUTE = 60_000

/** A view (inserted directly: the views module is built in parallel). */
async function seedView(tenantId: string, userId: string, panel: number, name: string) {
  const now = t.clock.now().toISOString()
  const [row] = await t.deps.db
    .insert(views)
    .values({
      tenantId,
      userId,
      panelId: panel,
      name,
      config: { columns: [], groupBy: [], layout: 'table' },
      metadata: {},
      filters: [],
      sorting: [],
      columnVisibility: {},
      aggregations: [],
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return row.id
}

/** One notification for `userId`, one minute after the previous one. */
async function notify(userId: string, extra: Partial<typeof notifications.$inferInsert> = {}) {
  t.clock.advance(MINUTE)
  const [row] = await t.deps.db
    .insert(notifications)
    .values({
      tenantId: 'tenant-a',
      userId,
      viewId,
      type: 'VIEW_PUBLISHED',
      impact: 'info',
      message: 'View "Open cases" was published',
      createdAt: t.clock.now().toISOString(),
      ...extra,
    })
    .returning()
  return row
}

const list = (c: TestClient, query = '') => c.get(`/api/notifications/views${query ? `?${query}` : ''}`)
const markRead = (c: TestClient, notificationIds: unknown, extra: Record<string, unknown> = {}) =>
  c.put('/api/notifications/views/mark-read', { notificationIds, ...extra })
const stored = async (id: number) => (await t.deps.db.select().from(notifications).where(eq(notifications.id, id)))[0]

describe('GET /api/notifications/views', () => {
  it('lists the caller’s notifications newest first, with their view', async () => {
    const first = await notify('alice')
    const second = await notify('alice', { type: 'DATA_CHANGED', impact: 'warning', message: 'Data changed' })
    const res = await list(alice, 'tenantId=tenant-a&userId=alice')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ notifications: expect.any(Array), total: 2, unreadCount: 2, hasMore: false })
    expect(res.body.notifications.map((n: { id: number }) => n.id)).toEqual([second.id, first.id])
    expect(res.body.notifications[1]).toEqual({
      id: first.id,
      viewId,
      userId: 'alice',
      tenantId: 'tenant-a',
      type: 'VIEW_PUBLISHED',
      impact: 'info',
      message: 'View "Open cases" was published',
      isRead: false,
      createdAt: '2026-01-01T12:01:00.000Z',
      readAt: null,
      view: { id: viewId, name: 'Open cases', panelId },
    })
  })

  it('lists only the caller’s notifications, never another user’s or another tenant’s', async () => {
    const mine = await notify('alice')
    await notify('bob')
    await notify('alice', { tenantId: 'tenant-b' })
    const res = await list(alice)
    expect(res.body.notifications.map((n: { id: number }) => n.id)).toEqual([mine.id])
    expect(res.body).toMatchObject({ total: 1, unreadCount: 1 })
  })

  it('filters with isRead, keeping unreadCount for every unread notification', async () => {
    const read = await notify('alice', { isRead: true, readAt: '2026-01-01T12:30:00.000Z' })
    const unread1 = await notify('alice')
    const unread2 = await notify('alice')
    const ids = (body: { notifications: { id: number }[] }) => body.notifications.map((n) => n.id)

    const unread = await list(alice, 'isRead=false')
    expect(ids(unread.body)).toEqual([unread2.id, unread1.id])
    expect(unread.body).toMatchObject({ total: 2, unreadCount: 2, hasMore: false })

    const onlyRead = await list(alice, 'isRead=true')
    expect(ids(onlyRead.body)).toEqual([read.id])
    expect(onlyRead.body).toMatchObject({ total: 1, unreadCount: 2 })
    expect(onlyRead.body.notifications[0]).toMatchObject({ isRead: true, readAt: '2026-01-01T12:30:00.000Z' })

    expect((await list(alice)).body).toMatchObject({ total: 3, unreadCount: 2 })
  })

  it('accepts only true or false for isRead', async () => {
    for (const value of ['yes', '1', 'TRUE', '']) {
      const res = await list(alice, `isRead=${value}`)
      expect(res.status, value).toBe(400)
      expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['query.isRead'])
    }
  })

  it('pages with limit and offset', async () => {
    const made = []
    for (let i = 0; i < 5; i++) made.push((await notify('alice')).id)
    const page = async (query: string) => {
      const { body } = await list(alice, query)
      return [body.notifications.map((n: { id: number }) => n.id), body.total, body.hasMore]
    }
    expect(await page('limit=2')).toEqual([[made[4], made[3]], 5, true])
    expect(await page('limit=2&offset=2')).toEqual([[made[2], made[1]], 5, true])
    expect(await page('limit=2&offset=4')).toEqual([[made[0]], 5, false])
    for (const query of ['limit=0', 'limit=101', 'offset=-1']) expect((await list(alice, query)).status, query).toBe(400)
  })

  it('keeps a notification whose view or panel was deleted, with view null', async () => {
    const gone = await notify('alice', { viewId: 9999 })
    expect((await list(alice)).body.notifications[0]).toMatchObject({ id: gone.id, viewId: 9999, view: null })
    const kept = await notify('alice')
    await deletePanel(serviceCtx(t.deps, 'tenant-a', 'bob'), panelId)
    const res = await list(alice)
    expect(res.body.notifications.map((n: { id: number; view: unknown }) => [n.id, n.view])).toEqual([
      [kept.id, null],
      [gone.id, null],
    ])
  })

  it('never shows another tenant’s view with the same id', async () => {
    const otherPanel = (
      await createPanel(serviceCtx(t.deps, 'tenant-b', 'eve'), { name: 'B', tenantId: 'tenant-b', userId: 'eve' })
    ).id
    const otherView = await seedView('tenant-b', 'eve', otherPanel, 'Secret view')
    await notify('alice', { viewId: otherView })
    expect((await list(alice)).body.notifications[0].view).toBeNull()
  })

  it('answers 401 without a token and 403 for another tenant', async () => {
    expect((await t.app.request('/api/notifications/views')).status).toBe(401)
    const res = await list(alice, 'tenantId=tenant-b')
    expect(res.status).toBe(403)
    expect(res.body.error).toBe('Access denied to tenant')
  })
})

describe('PUT /api/notifications/views/mark-read', () => {
  it('marks the caller’s unread notifications read, sets readAt and counts them', async () => {
    const a = await notify('alice')
    const b = await notify('alice')
    const c = await notify('alice')
    t.clock.advance(MINUTE)
    const res = await markRead(alice, [a.id, b.id], { tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ updated: 2 })
    expect(await stored(a.id)).toMatchObject({ isRead: true, readAt: '2026-01-01T12:04:00.000Z' })
    expect(await stored(c.id)).toMatchObject({ isRead: false, readAt: null })
    expect((await list(alice)).body).toMatchObject({ total: 3, unreadCount: 1 })
  })

  it('does not count already read notifications, unknown ids or repeated ids', async () => {
    const a = await notify('alice')
    expect((await markRead(alice, [a.id])).body).toEqual({ updated: 1 })
    const readAt = (await stored(a.id)).readAt
    t.clock.advance(MINUTE)
    expect((await markRead(alice, [a.id, a.id, 424242])).body).toEqual({ updated: 0 })
    expect((await stored(a.id)).readAt).toBe(readAt)
  })

  it('never touches another user’s notifications', async () => {
    const mine = await notify('alice')
    const bobs = await notify('bob')
    expect((await markRead(alice, [mine.id, bobs.id])).body).toEqual({ updated: 1 })
    expect(await stored(bobs.id)).toMatchObject({ isRead: false, readAt: null })
  })

  it('answers updated 0 for another tenant’s ids and leaves them unchanged', async () => {
    const theirs = await notify('alice', { tenantId: 'tenant-b' })
    const res = await markRead(alice, [theirs.id])
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ updated: 0 })
    expect(await stored(theirs.id)).toMatchObject({ isRead: false, readAt: null })
  })

  it('rejects a missing, empty, oversized or non-integer id list, naming notificationIds', async () => {
    const tooMany = Array.from({ length: 501 }, (_, i) => i + 1)
    for (const ids of [undefined, [], tooMany, ['1'], [1.5], [0], 'all']) {
      const res = await markRead(alice, ids)
      expect(res.status, JSON.stringify(ids)?.slice(0, 20)).toBe(400)
      expect(res.body.details[0].path).toMatch(/^notificationIds/)
    }
    expect(
      (
        await markRead(
          alice,
          Array.from({ length: 500 }, (_, i) => i + 1),
        )
      ).body,
    ).toEqual({ updated: 0 })
  })

  it('answers 401 without a token and 403 for another tenant or user in the body', async () => {
    const mine = await notify('alice')
    const anonymous = await t.app.request('/api/notifications/views/mark-read', {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ notificationIds: [mine.id] }),
    })
    expect(anonymous.status).toBe(401)
    expect((await markRead(alice, [mine.id], { tenantId: 'tenant-b' })).status).toBe(403)
    expect((await markRead(alice, [mine.id], { userId: 'bob' })).status).toBe(403)
    expect(await stored(mine.id)).toMatchObject({ isRead: false })
  })
})
