import { beforeEach, describe, expect, it } from 'vitest'
import { createView, notificationsOf, type ViewsWorld, viewChanges, viewsWorld } from './fixtures.ts'

let w: ViewsWorld
let viewId: number

beforeEach(async () => {
  w = await viewsWorld()
  viewId = (await createView(w.alice, w.panelId, { name: 'Over 65' })).id
  w.t.clock.advance(60_000)
})

describe('POST /api/views/{id}/publish', () => {
  it('publishes with an empty body: isPublished, publishedAt, publishedBy and the default publishConfig', async () => {
    const res = await w.alice.post(`/api/views/${viewId}/publish`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      id: viewId,
      isPublished: true,
      publishedAt: '2026-01-01T12:01:00.000Z',
      publishedBy: 'alice',
      publishConfig: { permissions: ['read'], userGroups: [] },
      updatedAt: '2026-01-01T12:01:00.000Z',
      panel: { id: w.panelId, name: 'Diabetes' },
    })
    expect((await w.alice.get(`/api/views/${viewId}`)).body.isPublished).toBe(true)
  })

  it('records a PUBLISH change and notifies every other user of the tenant once, never the actor', async () => {
    await w.alice.post(`/api/views/${viewId}/publish`, { tenantId: 'tenant-a', userId: 'alice' })
    const notes = await notificationsOf(w.t, 'tenant-a')
    expect(notes).toHaveLength(1)
    expect(notes[0]).toMatchObject({
      userId: 'bob',
      viewId,
      type: 'VIEW_PUBLISHED',
      impact: 'info',
      message: 'View "Over 65" was published',
      isRead: false,
    })
    expect(await notificationsOf(w.t, 'tenant-b')).toHaveLength(0)
    const changes = await viewChanges(w.t, 'tenant-a', viewId)
    expect(changes.at(-1)).toMatchObject({ action: 'PUBLISH', entityType: 'View', panelId: w.panelId, userId: 'alice' })
    expect(changes.at(-1)?.changes.isPublished).toEqual({ oldValue: false, newValue: true })
  })

  it('is idempotent: same publishedAt, no new notification, no new change', async () => {
    const first = await w.alice.post(`/api/views/${viewId}/publish`)
    const notesBefore = (await notificationsOf(w.t, 'tenant-a')).length
    const changesBefore = (await viewChanges(w.t, 'tenant-a', viewId)).length
    w.t.clock.advance(60_000)
    const again = await w.alice.post(`/api/views/${viewId}/publish`, {})
    expect(again.status).toBe(200)
    expect(again.body.publishedAt).toBe(first.body.publishedAt)
    expect(again.body).toEqual(first.body)
    expect(await notificationsOf(w.t, 'tenant-a')).toHaveLength(notesBefore)
    expect(await viewChanges(w.t, 'tenant-a', viewId)).toHaveLength(changesBefore)
  })

  it('saves a changed publishConfig on a published view as an UPDATE, without notifying', async () => {
    await w.alice.post(`/api/views/${viewId}/publish`)
    const publishConfig = { permissions: ['read', 'edit'], userGroups: ['nurses'], allowDownload: true }
    const res = await w.alice.post(`/api/views/${viewId}/publish`, { publishConfig })
    expect(res.body.publishConfig).toEqual(publishConfig)
    expect(res.body.publishedAt).toBe('2026-01-01T12:01:00.000Z')
    expect(await notificationsOf(w.t, 'tenant-a')).toHaveLength(1)
    const last = (await viewChanges(w.t, 'tenant-a', viewId)).at(-1)
    expect(last?.action).toBe('UPDATE')
    expect(last?.changes.publishConfig.newValue).toEqual(publishConfig)
  })

  it('stores a full publishConfig, normalising expiresAt, and drops unknown keys', async () => {
    const res = await w.alice.post(`/api/views/${viewId}/publish`, {
      publishConfig: {
        permissions: ['read'],
        userGroups: [],
        publishedTitle: 'Elderly',
        description: 'shared',
        isDefault: true,
        expiresAt: '2026-02-01T00:00:00Z',
        passwordProtected: false,
        allowComments: true,
        secret: 'x',
      },
    })
    expect(res.status).toBe(200)
    expect(res.body.publishConfig).toEqual({
      permissions: ['read'],
      userGroups: [],
      publishedTitle: 'Elderly',
      description: 'shared',
      isDefault: true,
      expiresAt: '2026-02-01T00:00:00.000Z',
      passwordProtected: false,
      allowComments: true,
    })
  })

  it('rejects a publishConfig without permissions or userGroups, or with bad values, naming the fields', async () => {
    const bad = [
      [{ userGroups: [] }, 'publishConfig.permissions'],
      [{ permissions: ['read'] }, 'publishConfig.userGroups'],
      [{ permissions: ['own'], userGroups: [] }, 'publishConfig.permissions.0'],
      [{ permissions: ['read'], userGroups: [], expiresAt: 'tomorrow' }, 'publishConfig.expiresAt'],
    ] as const
    for (const [publishConfig, path] of bad) {
      const res = await w.alice.post(`/api/views/${viewId}/publish`, { publishConfig })
      expect(res.status).toBe(400)
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path)
    }
    expect((await w.alice.get(`/api/views/${viewId}`)).body.isPublished).toBe(false)
  })

  it("answers 404 for another user's unpublished view and 403 for their published one", async () => {
    expect((await w.bob.post(`/api/views/${viewId}/publish`)).status).toBe(404)
    await w.alice.post(`/api/views/${viewId}/publish`)
    const res = await w.bob.post(`/api/views/${viewId}/publish`, { publishConfig: { permissions: ['manage'], userGroups: [] } })
    expect(res.status).toBe(403)
    expect((await w.alice.get(`/api/views/${viewId}`)).body.publishConfig.permissions).toEqual(['read'])
  })
})

describe('POST /api/views/{id}/unpublish', () => {
  it('unpublishes with an UPDATE change and hides the view from other users again', async () => {
    await w.alice.post(`/api/views/${viewId}/publish`)
    w.t.clock.advance(1000)
    const res = await w.alice.post(`/api/views/${viewId}/unpublish`, { tenantId: 'tenant-a', userId: 'alice' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ isPublished: false, publishedAt: null, publishedBy: null })
    const last = (await viewChanges(w.t, 'tenant-a', viewId)).at(-1)
    expect(last).toMatchObject({ action: 'UPDATE' })
    expect(last?.changes.isPublished).toEqual({ oldValue: true, newValue: false })
    expect((await w.bob.get(`/api/views/${viewId}`)).status).toBe(404)
    expect((await w.bob.get('/api/views')).body.total).toBe(0)
  })

  it('is idempotent on an unpublished view', async () => {
    const res = await w.alice.post(`/api/views/${viewId}/unpublish`)
    expect(res.status).toBe(200)
    expect(res.body.isPublished).toBe(false)
    expect(await viewChanges(w.t, 'tenant-a', viewId)).toHaveLength(1)
  })

  it('keeps the publishConfig, and a later publish notifies again with a new publishedAt', async () => {
    const publishConfig = { permissions: ['read'], userGroups: ['doctors'] }
    await w.alice.post(`/api/views/${viewId}/publish`, { publishConfig })
    await w.alice.post(`/api/views/${viewId}/unpublish`)
    w.t.clock.advance(1000)
    const again = await w.alice.post(`/api/views/${viewId}/publish`)
    expect(again.body.publishConfig).toEqual(publishConfig)
    expect(again.body.publishedAt).toBe('2026-01-01T12:01:01.000Z')
    expect((await notificationsOf(w.t, 'tenant-a')).filter((n) => n.type === 'VIEW_PUBLISHED')).toHaveLength(2)
  })

  it('is owner only: 403 for another user while the view is published', async () => {
    await w.alice.post(`/api/views/${viewId}/publish`)
    expect((await w.bob.post(`/api/views/${viewId}/unpublish`)).status).toBe(403)
    expect((await w.bob.get(`/api/views/${viewId}`)).body.isPublished).toBe(true)
  })
})
