import { beforeEach, describe, expect, it } from 'vitest'
import { type ChangeAction, type ChangeEntity, views } from '../../../src/db/schema.ts'
import { changeInsert } from '../../../src/modules/changes/changes.service.ts'
import { createPanel, deletePanel, updatePanel } from '../../../src/modules/panels/panels.service.ts'
import { makeTestApp, serviceCtx, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'

let t: TestApp
let alice: TestClient
let bob: TestClient

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
})

const MINUTE = 60_000
const ctx = (userId: string, tenantId = 'tenant-a') => serviceCtx(t.deps, tenantId, userId)
const seedPanel = (userId: string, name = 'Test Panel', tenantId = 'tenant-a') =>
  createPanel(ctx(userId, tenantId), { name, tenantId, userId })
const feed = (c: TestClient, query = '') => c.get(`/api/changes/panels${query ? `?${query}` : ''}`)

/** A change record through the same statement services use in their batches. */
const record = (userId: string, panelId: number, entityType: ChangeEntity, action: ChangeAction, entityId = panelId) =>
  changeInsert(ctx(userId), { panelId, entityType, entityId, action, changes: {} })

/** A view of `userId` on the panel (inserted directly: the views module is built in parallel). */
async function seedView(userId: string, panelId: number, isPublished: boolean, tenantId = 'tenant-a') {
  const now = t.clock.now().toISOString()
  const [row] = await t.deps.db
    .insert(views)
    .values({
      tenantId,
      userId,
      panelId,
      name: `${userId}'s view`,
      config: { columns: [], groupBy: [], layout: 'table' },
      metadata: {},
      filters: [],
      sorting: [],
      columnVisibility: {},
      aggregations: [],
      isPublished,
      publishedAt: isPublished ? now : null,
      publishedBy: isPublished ? userId : null,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  return row
}

describe('GET /api/changes/panels', () => {
  it('lists the change records of the caller’s panels, newest first, in the contract shape', async () => {
    const panel = await seedPanel('alice', 'Diabetes')
    t.clock.advance(MINUTE)
    await updatePanel(ctx('alice'), panel.id, { name: 'Diabetes follow-up' })
    const res = await alice.get('/api/changes/panels?tenantId=tenant-a&userId=alice')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ changes: expect.any(Array), total: 2, hasMore: false })
    expect(res.body.changes.map((c: { action: string }) => c.action)).toEqual(['UPDATE', 'CREATE'])
    expect(res.body.changes[0]).toEqual({
      id: expect.any(Number),
      panelId: panel.id,
      entityType: 'Panel',
      entityId: panel.id,
      action: 'UPDATE',
      changes: { name: { oldValue: 'Diabetes', newValue: 'Diabetes follow-up' } },
      metadata: { source: 'system' },
      tenantId: 'tenant-a',
      userId: 'alice',
      createdAt: '2026-01-01T12:01:00.000Z',
    })
  })

  it.skipIf(onTarget(['workers', 'deno'], SKIP.clientIp))(
    'keeps the request metadata of changes made through the API',
    async () => {
      await alice.post('/api/panels', { name: 'x', tenantId: 'tenant-a', userId: 'alice' }, { 'User-Agent': 'panels-web/1.0' })
      const res = await feed(alice)
      expect(res.body.changes[0].metadata).toEqual({ source: 'api', userAgent: 'panels-web/1.0' })
    },
  )

  it('orders changes of the same instant by id, newest first', async () => {
    const panel = await seedPanel('alice')
    await record('alice', panel.id, 'Column', 'CREATE', 10)
    await record('alice', panel.id, 'Column', 'CREATE', 11)
    const res = await feed(alice)
    expect(res.body.changes.map((c: { entityId: number }) => c.entityId)).toEqual([11, 10, panel.id])
  })

  it('treats since as inclusive', async () => {
    const panel = await seedPanel('alice')
    for (const _ of [1, 2]) {
      t.clock.advance(MINUTE)
      await updatePanel(ctx('alice'), panel.id, { name: `Name at ${t.clock.now().toISOString()}` })
    }
    const res = await feed(alice, 'since=2026-01-01T12:01:00.000Z')
    expect(res.status).toBe(200)
    expect(res.body.changes.map((c: { createdAt: string }) => c.createdAt)).toEqual([
      '2026-01-01T12:02:00.000Z',
      '2026-01-01T12:01:00.000Z',
    ])
    expect(res.body.total).toBe(2)
  })

  it('reads since in any ISO 8601 form: offsets, no milliseconds, a bare date', async () => {
    await seedPanel('alice')
    t.clock.advance(MINUTE)
    await seedPanel('alice')
    const count = async (since: string) => (await feed(alice, `since=${encodeURIComponent(since)}`)).body.total
    expect(await count('2026-01-01T13:01:00+01:00')).toBe(1)
    expect(await count('2026-01-01T12:01Z')).toBe(1)
    expect(await count('2026-01-01T12:00:00')).toBe(2)
    expect(await count('2026-01-01')).toBe(2)
    expect(await count('2026-01-02')).toBe(0)
  })

  it('rejects an invalid since with a 400 naming since', async () => {
    for (const since of ['yesterday', '2026-02-31', '2026-01-01T25:00:00Z', '1767268800000', '']) {
      const res = await feed(alice, `since=${encodeURIComponent(since)}`)
      expect(res.status, since).toBe(400)
      expect(res.body).toMatchObject({ error: 'Validation Error', code: 'VALIDATION_ERROR' })
      expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['query.since'])
    }
  })

  it('filters by panelId, entityType and action', async () => {
    const one = await seedPanel('alice', 'One')
    const two = await seedPanel('alice', 'Two')
    await record('alice', one.id, 'DataSource', 'SYNC', 5)
    await record('alice', one.id, 'View', 'PUBLISH', 6)
    await record('alice', two.id, 'DataSource', 'CREATE', 7)
    const pick = async (query: string) =>
      (await feed(alice, query)).body.changes.map((c: { entityType: string; action: string; panelId: number }) => [
        c.panelId,
        c.entityType,
        c.action,
      ])
    expect(await pick(`panelId=${one.id}`)).toEqual([
      [one.id, 'View', 'PUBLISH'],
      [one.id, 'DataSource', 'SYNC'],
      [one.id, 'Panel', 'CREATE'],
    ])
    expect(await pick('entityType=DataSource')).toEqual([
      [two.id, 'DataSource', 'CREATE'],
      [one.id, 'DataSource', 'SYNC'],
    ])
    expect(await pick('action=CREATE&entityType=Panel')).toEqual([
      [two.id, 'Panel', 'CREATE'],
      [one.id, 'Panel', 'CREATE'],
    ])
    expect(await pick(`panelId=${two.id}&action=PUBLISH`)).toEqual([])
  })

  it('rejects unknown entity types and actions, and a non-numeric panelId', async () => {
    for (const query of ['entityType=panel', 'action=created', 'panelId=abc', 'panelId=0']) {
      const res = await feed(alice, query)
      expect(res.status, query).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
    }
  })

  it('pages with limit and offset or page, reporting total and hasMore', async () => {
    const panel = await seedPanel('alice')
    for (let i = 1; i <= 4; i++) await record('alice', panel.id, 'Column', 'CREATE', 100 + i)
    const ids = async (query: string) => {
      const res = await feed(alice, query)
      expect(res.status).toBe(200)
      return [res.body.changes.map((c: { entityId: number }) => c.entityId), res.body.total, res.body.hasMore]
    }
    expect(await ids('limit=2')).toEqual([[104, 103], 5, true])
    expect(await ids('limit=2&offset=2')).toEqual([[102, 101], 5, true])
    expect(await ids('limit=2&offset=4')).toEqual([[panel.id], 5, false])
    expect(await ids('limit=2&page=2')).toEqual([[102, 101], 5, true])
    expect(await ids('limit=2&page=3')).toEqual([[panel.id], 5, false])
    expect(await ids('limit=2&page=9')).toEqual([[], 5, false])
    expect(await ids('')).toEqual([[104, 103, 102, 101, panel.id], 5, false])
  })

  it('rejects a limit outside 1–100, a negative offset, page 0 and offset with page together', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=ten', 'offset=-1', 'page=0', 'offset=2&page=2']) {
      const res = await feed(alice, query)
      expect(res.status, query).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
    }
  })

  it('hides another user’s panel changes until that panel has a published view', async () => {
    const bobs = await seedPanel('bob', 'Bob’s panel')
    expect((await feed(alice)).body).toEqual({ changes: [], total: 0, hasMore: false })
    await seedView('bob', bobs.id, false)
    expect((await feed(alice)).body.total).toBe(0)
    await seedView('bob', bobs.id, true)
    const res = await feed(alice)
    expect(res.body.total).toBe(1)
    expect(res.body.changes[0]).toMatchObject({ panelId: bobs.id, userId: 'bob', action: 'CREATE' })
  })

  it('does not show the changes of another user’s deleted panel, even with a published view', async () => {
    const bobs = await seedPanel('bob')
    await seedView('bob', bobs.id, true)
    await deletePanel(ctx('bob'), bobs.id)
    expect((await feed(alice)).body.total).toBe(0)
  })

  it('still lists the changes of the caller’s own soft-deleted panel, including its DELETE', async () => {
    const panel = await seedPanel('alice')
    t.clock.advance(MINUTE)
    expect((await alice.delete(`/api/panels/${panel.id}`)).status).toBe(204)
    const res = await feed(alice, `panelId=${panel.id}`)
    expect(res.body.changes.map((c: { action: string }) => c.action)).toEqual(['DELETE', 'CREATE'])
  })

  it('never shows another tenant’s changes, published or not', async () => {
    const other = await seedPanel('alice', 'Same user name, other tenant', 'tenant-b')
    await seedView('alice', other.id, true, 'tenant-b')
    await seedPanel('bob')
    expect((await feed(alice)).body.total).toBe(0)
    expect((await feed(alice, `panelId=${other.id}`)).body.total).toBe(0)
    const theirs = await feed(clientFor(t.app, 'tenant-b', 'carol'))
    expect(theirs.body.changes.map((c: { panelId: number }) => c.panelId)).toEqual([other.id])
  })

  it('shows each user only their own view of the feed', async () => {
    await seedPanel('alice')
    await seedPanel('bob')
    expect((await feed(alice)).body.changes.map((c: { userId: string }) => c.userId)).toEqual(['alice'])
    expect((await feed(bob)).body.changes.map((c: { userId: string }) => c.userId)).toEqual(['bob'])
  })

  it('answers 401 without a token and 403 for another tenant or user in the query', async () => {
    expect((await t.app.request('/api/changes/panels')).status).toBe(401)
    const tenant = await feed(alice, 'tenantId=tenant-b')
    expect(tenant.status).toBe(403)
    expect(tenant.body.error).toBe('Access denied to tenant')
    const user = await feed(alice, 'userId=bob')
    expect(user.status).toBe(403)
    expect(user.body.error).toBe('Access denied to user')
  })
})
