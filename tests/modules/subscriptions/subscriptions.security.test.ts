import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient
let bob: TestClient
let eve: TestClient
let admin: TestClient
let id: number

beforeAll(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  eve = clientFor(t.app, 'tenant-b', 'eve')
  admin = clientFor(t.app, 'tenant-a', 'ada', { role: 'admin' })
  id = (await alice.post('/api/subscriptions', { url: 'https://hooks.example.com/a', events: ['*'] })).body.id
})

describe('subscriptions security', () => {
  it('answers 401 without a token', async () => {
    for (const [method, path] of [
      ['GET', '/api/subscriptions'],
      ['POST', '/api/subscriptions'],
      ['GET', `/api/subscriptions/${id}`],
      ['POST', `/api/subscriptions/${id}/test`],
    ]) {
      const res = await t.app.request(path, { method })
      expect(res.status, `${method} ${path}`).toBe(401)
    }
  })

  it('answers 403 for a tenantId or userId other than the token’s', async () => {
    const tenant = await alice.post('/api/subscriptions', { url: 'https://x.example.com', events: ['*'], tenantId: 'tenant-b' })
    expect(tenant.status).toBe(403)
    expect(tenant.body.error).toBe('Access denied to tenant')
    const user = await alice.get('/api/subscriptions?userId=bob')
    expect(user.status).toBe(403)
    expect(user.body.error).toBe('Access denied to user')
  })

  it.each([
    ['another user', () => bob],
    ['another tenant', () => eve],
  ])("hides alice's subscription from %s on every route (404)", async (_who, who) => {
    const c = who()
    for (const res of [
      await c.get(`/api/subscriptions/${id}`),
      await c.put(`/api/subscriptions/${id}`, { description: 'mine now' }),
      await c.delete(`/api/subscriptions/${id}`),
      await c.get(`/api/subscriptions/${id}/deliveries`),
      await c.post(`/api/subscriptions/${id}/test`),
    ]) {
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ error: 'Subscription not found', code: 'NOT_FOUND' })
      expect(res.body.message).toBe(`Subscription ${id} not found for tenant ${c.tenantId}`)
    }
    expect((await c.get('/api/subscriptions')).body).toEqual({ subscriptions: [], total: 0 })
    expect((await alice.get(`/api/subscriptions/${id}`)).body.description).toBeNull()
  })

  it('lets an admin act for a user of the tenant only by naming them, as everywhere (CONTRACT)', async () => {
    expect((await admin.get(`/api/subscriptions/${id}`)).status).toBe(404)
    const asAlice = await admin.get(`/api/subscriptions/${id}?userId=alice`)
    expect(asAlice.status).toBe(200)
    expect(asAlice.body).not.toHaveProperty('secret')
  })
})
