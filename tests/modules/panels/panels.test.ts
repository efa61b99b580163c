import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
})

const create = (c: TestClient, name = 'Test Panel', extra: Record<string, unknown> = {}) =>
  c.post('/api/panels', { name, tenantId: c.tenantId, userId: c.userId, ...extra })

describe('POST /api/panels', () => {
  it('creates a panel with an empty AND cohort rule', async () => {
    const res = await create(alice, 'Diabetes', { description: 'HbA1c > 7' })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      id: expect.any(Number),
      name: 'Diabetes',
      description: 'HbA1c > 7',
      tenantId: 'tenant-a',
      userId: 'alice',
      cohortRule: { conditions: [], logic: 'AND' },
      createdAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:00.000Z',
    })
  })

  it('records a CREATE change for the panel', async () => {
    const { body: panel } = await create(alice)
    const res = await alice.get('/api/changes/panels?tenantId=tenant-a&userId=alice')
    expect(res.status).toBe(200)
    expect(res.body.changes[0]).toMatchObject({
      entityType: 'Panel',
      entityId: panel.id,
      panelId: panel.id,
      action: 'CREATE',
      tenantId: 'tenant-a',
      userId: 'alice',
    })
  })

  it('rejects a missing name, an empty name and a name over 255 characters, naming the field', async () => {
    for (const name of [undefined, '', 'x'.repeat(256)]) {
      const res = await alice.post('/api/panels', { name, tenantId: 'tenant-a', userId: 'alice' })
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ error: 'Validation Error', statusCode: 400, code: 'VALIDATION_ERROR' })
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain('name')
    }
  })

  it('requires tenantId and userId in the body', async () => {
    const res = await alice.post('/api/panels', { name: 'x' })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['tenantId', 'userId'])
  })

  it('rejects a wrong type for description', async () => {
    const res = await create(alice, 'x', { description: 42 })
    expect(res.status).toBe(400)
    expect(res.body.details[0].path).toBe('description')
  })

  it('ignores unknown fields', async () => {
    const res = await create(alice, 'x', { id: 999, deletedAt: 'now', evil: true })
    expect(res.status).toBe(201)
    expect(res.body.id).not.toBe(999)
    expect(res.body).not.toHaveProperty('evil')
  })

  it('answers 400 INVALID_JSON for malformed JSON and 415 for another media type', async () => {
    const raw = await t.app.request('/api/panels', {
      method: 'POST',
      headers: { ...(await import('../../helpers/auth.ts').then((m) => m.authHeaders('tenant-a', 'alice'))) },
      body: '{"name": ',
    })
    expect(raw.status).toBe(400)
    expect((await raw.json()).code).toBe('INVALID_JSON')
    const xml = await t.app.request('/api/panels', {
      method: 'POST',
      headers: {
        ...(await import('../../helpers/auth.ts').then((m) => m.authHeaders('tenant-a', 'alice'))),
        'Content-Type': 'text/xml',
      },
      body: '<panel/>',
    })
    expect(xml.status).toBe(415)
    expect((await xml.json()).code).toBe('UNSUPPORTED_MEDIA_TYPE')
  })
})
