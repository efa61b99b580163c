import { beforeEach, describe, expect, it } from 'vitest'
import { signRaw } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { createView, notificationsOf, type ViewsWorld, viewChanges, viewsWorld } from './fixtures.ts'

let w: ViewsWorld
let viewId: number

beforeEach(async () => {
  w = await viewsWorld()
  viewId = (await createView(w.alice, w.panelId, { name: 'Secret', filters: [{ columnTitle: 'Age', operator: 'gt', value: 1 }] }))
    .id
})

type Route = [method: string, path: string, body?: Record<string, unknown>]

/** Every view route that names a view, with a valid body. */
const idRoutes = (): Route[] => [
  ['GET', `/api/views/${viewId}`],
  ['PUT', `/api/views/${viewId}`, { name: 'Changed' }],
  ['DELETE', `/api/views/${viewId}`, {}],
  ['POST', `/api/views/${viewId}/publish`, {}],
  ['POST', `/api/views/${viewId}/unpublish`, {}],
  ['GET', `/api/views/${viewId}/sorts`],
  ['PUT', `/api/views/${viewId}/sorts`, { sorts: [{ columnName: 'Age', direction: 'asc' }] }],
  ['GET', `/api/views/${viewId}/filters`],
  ['PUT', `/api/views/${viewId}/filters`, { filters: [] }],
]

const routes = (): Route[] => [['GET', '/api/views'], ['POST', '/api/views', { name: 'X', panelId: w.panelId }], ...idRoutes()]

const send = (c: TestClient, [method, path, body]: Route, extra: Record<string, unknown> = {}) => {
  if (method === 'GET') {
    const query = new URLSearchParams(extra as Record<string, string>).toString()
    return c.get(query ? `${path}${path.includes('?') ? '&' : '?'}${query}` : path)
  }
  const payload = { ...body, ...extra }
  return method === 'POST' ? c.post(path, payload) : method === 'PUT' ? c.put(path, payload) : c.delete(path, payload)
}

async function raw([method, path, body]: Route, authorization?: string) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' }
  if (authorization) headers.Authorization = authorization
  const res = await w.t.app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

describe('views authentication', () => {
  it('answers 401 on every route without a token, with a forged token and with an expired one', async () => {
    const forged = `Bearer ${await signRaw({ tenantId: 'tenant-a', userId: 'alice', exp: 4102444800 }, 'another-secret-another-secret-00000')}`
    const expired = `Bearer ${await signRaw({ tenantId: 'tenant-a', userId: 'alice', exp: 1000 })}`
    for (const route of routes()) {
      for (const auth of [undefined, forged, expired]) {
        const res = await raw(route, auth)
        expect(res.status, `${route[0]} ${route[1]}`).toBe(401)
        expect(res.body.error).toBe('Unauthorized')
      }
    }
    const changes = await viewChanges(w.t, 'tenant-a', viewId)
    expect(changes.map((c) => c.action)).toEqual(['CREATE'])
  })
})

describe('views tenant guard', () => {
  it('answers 403 "Access denied to tenant" when the query or body names another tenant', async () => {
    for (const route of routes()) {
      const res = await send(w.alice, route, { tenantId: 'tenant-b' })
      expect(res.status, `${route[0]} ${route[1]}`).toBe(403)
      expect(res.body).toMatchObject({ error: 'Access denied to tenant', code: 'TENANT_ACCESS_DENIED' })
    }
    expect((await w.alice.get(`/api/views/${viewId}`)).body).toMatchObject({ name: 'Secret', isPublished: false })
  })

  it('answers 403 "Access denied to user" when the query or body names another user', async () => {
    for (const route of routes()) {
      const res = await send(w.alice, route, { userId: 'bob' })
      expect(res.status, `${route[0]} ${route[1]}`).toBe(403)
      expect(res.body.error).toBe('Access denied to user')
    }
  })

  it('validates before the tenant check (400 before 403)', async () => {
    const res = await w.alice.post('/api/views', { name: '', panelId: w.panelId, tenantId: 'tenant-b' })
    expect(res.status).toBe(400)
    const put = await w.alice.put(`/api/views/${viewId}/sorts`, {
      sorts: [{ columnName: 'a', direction: 'x' }],
      tenantId: 'tenant-b',
    })
    expect(put.status).toBe(400)
  })
})

describe('views cross-tenant isolation', () => {
  it("answers 404 on every id route for another tenant's view, published or not, and leaves it unchanged", async () => {
    const before = (await w.alice.get(`/api/views/${viewId}`)).body
    for (const published of [false, true]) {
      if (published) await w.alice.post(`/api/views/${viewId}/publish`)
      const snapshot = (await w.alice.get(`/api/views/${viewId}`)).body
      for (const route of idRoutes()) {
        const res = await send(w.eve, route)
        expect(res.status, `${route[0]} ${route[1]}`).toBe(404)
        expect(res.body).toMatchObject({ error: 'View not found', message: `View ${viewId} not found for tenant tenant-b` })
      }
      expect((await w.alice.get(`/api/views/${viewId}`)).body).toEqual(snapshot)
    }
    expect(before.isPublished).toBe(false)
    expect((await w.alice.get(`/api/views/${viewId}/filters`)).body.filters).toHaveLength(1)
    expect(await notificationsOf(w.t, 'tenant-b')).toHaveLength(0)
  })

  it("never lists another tenant's published views", async () => {
    await w.alice.post(`/api/views/${viewId}/publish`)
    const res = await w.eve.get('/api/views?tenantId=tenant-b&userId=eve')
    expect(res.body).toEqual({ views: [], total: 0 })
  })

  it("cannot create a view on another tenant's panel", async () => {
    const res = await w.eve.post('/api/views', { name: 'x', panelId: w.panelId })
    expect(res.status).toBe(404)
    expect(res.body.message).toBe(`Panel ${w.panelId} not found for tenant tenant-b`)
  })
})

describe('views ownership', () => {
  it('a non-owner PUT is 404 on an unpublished view and 403 on a published one', async () => {
    expect((await w.bob.put(`/api/views/${viewId}`, { name: 'Mine now' })).status).toBe(404)
    await w.alice.post(`/api/views/${viewId}/publish`)
    const res = await w.bob.put(`/api/views/${viewId}`, { name: 'Mine now' })
    expect(res.status).toBe(403)
    // Since issue 12 the refusal names the permission the publish settings do not give (a name is `manage`'s).
    expect(res.body.message).toBe(`The view's publish settings do not give you the "manage" permission (change name)`)
    expect((await w.alice.get(`/api/views/${viewId}`)).body.name).toBe('Secret')
  })

  it('an admin of the tenant may change a view of another user', async () => {
    const admin = clientFor(w.t.app, 'tenant-a', 'root', { role: 'admin' })
    const res = await admin.put(`/api/views/${viewId}`, { description: 'moderated' })
    expect(res.status).toBe(200)
    expect(res.body.userId).toBe('alice')
  })
})
