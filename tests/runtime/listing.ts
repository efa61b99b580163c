import { expect, it } from 'vitest'
import { bearer, type SmokeTarget } from './smoke.ts'

/**
 * Joined selects on a served runtime, checked field by field: the views list (each view with its
 * panel) and the notifications list (each notification with its view), then mark-read and the
 * isRead filter that depend on them. On D1, joined selects inside `db.batch` once mapped columns
 * by name, so duplicate names (`id`, `name`) shifted every later field. Registers its cases in the
 * caller's `describe`; they share one tenant and run in order.
 */
export function listingSuite(target: () => SmokeTarget) {
  const tenant = `listing-${crypto.randomUUID().slice(0, 8)}`
  const state: { panelId?: number; viewId?: number; notificationId?: number } = {}
  const url = (path: string) => `${target().base}${path}`
  const send = async (user: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(url(path), {
      method,
      headers: await bearer(target().secret, tenant, user),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const who = (userId: string) => ({ tenantId: tenant, userId })

  it('lists views with their own fields and their panel (GET /api/views)', async () => {
    // Bob exists in the tenant (his own panel), so alice's publish notifies him.
    expect((await send('bob', 'POST', '/api/panels', { name: 'Bob panel', ...who('bob') })).status).toBe(201)
    const panel = await send('alice', 'POST', '/api/panels', { name: 'Panel P', description: 'the panel', ...who('alice') })
    expect(panel.status).toBe(201)
    state.panelId = panel.body.id
    const view = await send('alice', 'POST', '/api/views', {
      name: 'View V',
      description: 'the view',
      panelId: state.panelId,
      config: { pageSize: 25 },
      ...who('alice'),
    })
    expect(view.status).toBe(201)
    state.viewId = view.body.id
    expect(state.viewId).not.toBe(state.panelId)

    const listed = await send('alice', 'GET', `/api/views?tenantId=${tenant}&userId=alice`)
    expect(listed.status).toBe(200)
    const items = listed.body.views ?? listed.body.data ?? listed.body
    expect(items).toHaveLength(1)
    expect(items[0]).toEqual(view.body)
    expect(items[0]).toMatchObject({
      id: state.viewId,
      name: 'View V',
      description: 'the view',
      panelId: state.panelId,
      userId: 'alice',
      tenantId: tenant,
      isPublished: false,
      config: { pageSize: 25 },
      panel: { id: state.panelId, name: 'Panel P' },
    })
  })

  it("lists another user's published view with its panel", async () => {
    const published = await send('alice', 'POST', `/api/views/${state.viewId}/publish`, who('alice'))
    expect(published.status).toBe(200)
    const listed = await send('bob', 'GET', `/api/views?tenantId=${tenant}&userId=bob`)
    expect(listed.status).toBe(200)
    const items = listed.body.views ?? listed.body.data ?? listed.body
    expect(items).toHaveLength(1)
    expect(items[0]).toEqual(published.body)
    expect(items[0]).toMatchObject({
      id: state.viewId,
      name: 'View V',
      userId: 'alice',
      isPublished: true,
      publishedBy: 'alice',
      panel: { id: state.panelId, name: 'Panel P' },
    })
  })

  it('lists notifications with their view (GET /api/notifications/views)', async () => {
    const listed = await send('bob', 'GET', `/api/notifications/views?tenantId=${tenant}&userId=bob`)
    expect(listed.status).toBe(200)
    expect(listed.body).toMatchObject({ total: 1, unreadCount: 1, hasMore: false })
    expect(listed.body.notifications).toHaveLength(1)
    const [n] = listed.body.notifications
    expect(Object.keys(n).sort()).toEqual(
      ['createdAt', 'id', 'impact', 'isRead', 'message', 'readAt', 'tenantId', 'type', 'userId', 'view', 'viewId'].sort(),
    )
    expect(n).toMatchObject({
      viewId: state.viewId,
      userId: 'bob',
      tenantId: tenant,
      type: 'VIEW_PUBLISHED',
      isRead: false,
      readAt: null,
      view: { id: state.viewId, name: 'View V', panelId: state.panelId },
    })
    expect(typeof n.id).toBe('number')
    expect(typeof n.message).toBe('string')
    expect(Number.isNaN(Date.parse(n.createdAt))).toBe(false)
    state.notificationId = n.id
  })

  it('marks a notification read, and the isRead filter follows', async () => {
    const marked = await send('bob', 'PUT', '/api/notifications/views/mark-read', {
      notificationIds: [state.notificationId],
      ...who('bob'),
    })
    expect(marked.status).toBe(200)
    expect(marked.body).toMatchObject({ updated: 1 })

    const read = await send('bob', 'GET', `/api/notifications/views?tenantId=${tenant}&userId=bob&isRead=true`)
    expect(read.body).toMatchObject({ total: 1, unreadCount: 0 })
    expect(read.body.notifications[0]).toMatchObject({
      id: state.notificationId,
      isRead: true,
      view: { id: state.viewId, name: 'View V', panelId: state.panelId },
    })
    expect(Number.isNaN(Date.parse(read.body.notifications[0].readAt))).toBe(false)
    const unread = await send('bob', 'GET', `/api/notifications/views?tenantId=${tenant}&userId=bob&isRead=false`)
    expect(unread.body).toMatchObject({ total: 0, unreadCount: 0, notifications: [] })
  })
}
