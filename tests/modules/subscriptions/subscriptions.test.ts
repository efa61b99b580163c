import { sql } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { emit } from './fixtures.ts'

const URL_OK = 'https://hooks.example.com/panels'

let t: TestApp
let alice: TestClient
let bob: TestClient
let alicePanel: number
let bobPanel: number
let bobView: number

beforeAll(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  alicePanel = (await alice.post('/api/panels', { name: 'Ward A', tenantId: 'tenant-a', userId: 'alice' })).body.id
  bobPanel = (await bob.post('/api/panels', { name: 'Ward B', tenantId: 'tenant-a', userId: 'bob' })).body.id
  bobView = (await bob.post('/api/views', { name: 'Bob only', panelId: bobPanel })).body.id
})

describe('POST /api/subscriptions', () => {
  it('creates a subscription and shows a generated secret once, never again', async () => {
    await emit(t.deps, 'tenant-a', [{ type: 'view.updated', panelId: alicePanel, data: {} }])
    const res = await alice.post('/api/subscriptions', { url: URL_OK, events: ['row.entered', 'row.left'], description: 'ward' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body).toMatchObject({
      url: URL_OK,
      events: ['row.entered', 'row.left'],
      panelId: null,
      viewId: null,
      description: 'ward',
      active: true,
      disabledReason: null,
      consecutiveFailures: 0,
      tenantId: 'tenant-a',
      userId: 'alice',
      createdAt: '2026-01-01T12:00:00.000Z',
    })
    // Events already in the log are not delivered: the queue starts after the tenant's last seq.
    expect(res.body.lastEventSeq).toBeGreaterThanOrEqual(1)
    expect(res.body.secret).toMatch(/^whsec_[0-9a-f]{64}$/)
    const id = res.body.id
    const one = await alice.get(`/api/subscriptions/${id}`)
    expect(one.status).toBe(200)
    expect(one.body).not.toHaveProperty('secret')
    const list = await alice.get('/api/subscriptions')
    expect(list.body.subscriptions.map((s: { id: number }) => s.id)).toContain(id)
    expect(list.body.subscriptions.every((s: object) => !('secret' in s))).toBe(true)
    const updated = await alice.put(`/api/subscriptions/${id}`, { description: 'renamed' })
    expect(updated.body).not.toHaveProperty('secret')
    // At rest: sealed like data-source secrets.
    const [stored] = await t.deps.db.all<{ secret: string }>(sql`SELECT secret FROM subscriptions WHERE id = ${id}`)
    expect(stored.secret.startsWith('enc:v1:')).toBe(true)
    expect(stored.secret).not.toContain(res.body.secret.slice(6))
  })

  it('keeps a secret the caller gives and does not answer it', async () => {
    const res = await alice.post('/api/subscriptions', { url: URL_OK, events: ['*'], secret: 'my-own-secret-0123456789' })
    expect(res.status).toBe(201)
    expect(res.body).not.toHaveProperty('secret')
    const [stored] = await t.deps.db.all<{ secret: string }>(sql`SELECT secret FROM subscriptions WHERE id = ${res.body.id}`)
    expect(await t.deps.secrets.decrypt(stored.secret)).toBe('my-own-secret-0123456789')
  })

  it('reads `*` as every type and drops repeated types', async () => {
    expect((await alice.post('/api/subscriptions', { url: URL_OK, events: ['row.left', '*'] })).body.events).toEqual(['*'])
    const twice = await alice.post('/api/subscriptions', { url: URL_OK, events: ['row.left', 'sync.failed', 'row.left'] })
    expect(twice.body.events).toEqual(['row.left', 'sync.failed'])
  })

  it.each([
    [{ events: ['row.entered'] }, 'url'],
    [{ url: 'not a url', events: ['row.entered'] }, 'url'],
    [{ url: 'ftp://hooks.example.com/x', events: ['row.entered'] }, 'url'],
    [{ url: 'https://user:pw@hooks.example.com/x', events: ['row.entered'] }, 'url'],
    [{ url: URL_OK }, 'events'],
    [{ url: URL_OK, events: [] }, 'events'],
    [{ url: URL_OK, events: ['row.moved'] }, 'events.0'],
    [{ url: URL_OK, events: ['*'], secret: 'short' }, 'secret'],
    [{ url: URL_OK, events: ['*'], panelId: 'one' }, 'panelId'],
    [{ url: URL_OK, events: ['*'], active: 'yes' }, 'active'],
  ])('answers 400 naming the field for %j', async (body, field) => {
    const res = await alice.post('/api/subscriptions', body)
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(field)
  })

  it("refuses another user's panel or view as a 404, and a view of another panel as a 400", async () => {
    const panel = await alice.post('/api/subscriptions', { url: URL_OK, events: ['*'], panelId: bobPanel })
    expect(panel.status).toBe(404)
    expect(panel.body.error).toBe('Panel not found')
    const view = await alice.post('/api/subscriptions', { url: URL_OK, events: ['*'], viewId: bobView })
    expect(view.status).toBe(404)
    expect(view.body.error).toBe('View not found')
    const mismatch = await bob.post('/api/subscriptions', { url: URL_OK, events: ['*'], panelId: alicePanel, viewId: bobView })
    expect(mismatch.status).toBe(404)
    const own = await bob.post('/api/views', { name: 'second', panelId: bobPanel })
    const other = await bob.post('/api/panels', { name: 'Ward C', tenantId: 'tenant-a', userId: 'bob' })
    const wrong = await bob.post('/api/subscriptions', {
      url: URL_OK,
      events: ['*'],
      panelId: other.body.id,
      viewId: own.body.id,
    })
    expect(wrong.status).toBe(400)
    expect(wrong.body.details).toEqual([
      { path: 'viewId', message: `view ${own.body.id} is not a view of panel ${other.body.id}` },
    ])
  })

  it("accepts a published view of another user (its events are the tenant's to read)", async () => {
    const view = await bob.post('/api/views', { name: 'Shared', panelId: bobPanel })
    expect((await bob.post(`/api/views/${view.body.id}/publish`, {})).status).toBe(200)
    const res = await alice.post('/api/subscriptions', { url: URL_OK, events: ['row.entered'], viewId: view.body.id })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.viewId).toBe(view.body.id)
  })
})

describe('PUT and DELETE /api/subscriptions/{id}', () => {
  it('changes the fields given and keeps the others', async () => {
    const made = await alice.post('/api/subscriptions', { url: URL_OK, events: ['row.entered'], panelId: alicePanel })
    const res = await alice.put(`/api/subscriptions/${made.body.id}`, { events: ['sync.failed'], active: false, id: 99 })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: made.body.id, url: URL_OK, events: ['sync.failed'], panelId: alicePanel, active: false })
    const cleared = await alice.put(`/api/subscriptions/${made.body.id}`, { panelId: null })
    expect(cleared.body.panelId).toBeNull()
  })

  it('rotates the secret without answering it', async () => {
    const made = await alice.post('/api/subscriptions', { url: URL_OK, events: ['*'] })
    const res = await alice.put(`/api/subscriptions/${made.body.id}`, { secret: 'rotated-secret-0123456789' })
    expect(res.status).toBe(200)
    expect(res.body).not.toHaveProperty('secret')
    const [stored] = await t.deps.db.all<{ secret: string }>(sql`SELECT secret FROM subscriptions WHERE id = ${made.body.id}`)
    expect(await t.deps.secrets.decrypt(stored.secret)).toBe('rotated-secret-0123456789')
  })

  it('deletes with 204, after which it is a 404 in the error shape', async () => {
    const made = await alice.post('/api/subscriptions', { url: URL_OK, events: ['*'] })
    const del = await alice.delete(`/api/subscriptions/${made.body.id}`)
    expect(del.status).toBe(204)
    const gone = await alice.get(`/api/subscriptions/${made.body.id}`)
    expect(gone.status).toBe(404)
    expect(gone.body).toMatchObject({
      error: 'Subscription not found',
      statusCode: 404,
      code: 'NOT_FOUND',
      message: `Subscription ${made.body.id} not found for tenant tenant-a`,
    })
    expect((await alice.get(`/api/subscriptions/${made.body.id}/deliveries`)).status).toBe(404)
  })
})
