import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { authHeaders, signRaw } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Shared views do what their publishConfig says (issue 12, docs/view-sharing.md), tried with the
 * view's owner (alice), a member of its group (nina, "nurses"), a user outside it (bob), a tenant
 * admin (ada) and another tenant's user (eve), on every route that reads or changes a view.
 * Rows: tests/modules/rows/fixtures.ts PATIENTS (six patients; London: p1 Ada, p5 Zoe).
 */

let w: RowsWorld
let nina: TestClient
let ada: TestClient
let viewId: number

beforeAll(async () => {
  w = await rowsWorld()
  nina = clientFor(w.t.app, 'tenant-a', 'nina', { groups: ['nurses'] })
  ada = clientFor(w.t.app, 'tenant-a', 'ada', { role: 'admin' })
  // Known in the tenant (she owns a panel), so publications notify her (CONTRACT: Notifications).
  expect((await nina.post('/api/panels', { name: 'Nina', tenantId: 'tenant-a', userId: 'nina' })).status).toBe(201)
})
afterAll(() => w.server.close())

/** A fresh view of alice's (City = London, showing Name and City), published with `publishConfig`. */
async function published(publishConfig: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const view = await w.alice.post('/api/views', {
    name: 'London worklist',
    description: 'internal notes',
    panelId: w.panelId,
    filters: [{ columnTitle: 'City', operator: 'equals', value: 'london' }],
    config: { columns: ['Name', 'City'] },
    ...extra,
  })
  expect(view.status, JSON.stringify(view.body)).toBe(201)
  const res = await w.alice.post(`/api/views/${view.body.id}/publish`, { publishConfig })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

const exportOf = async (c: TestClient, id: number, headers: Record<string, string> = {}) =>
  w.t.app.request(`/api/views/${id}/export?format=json`, {
    headers: {
      ...(await authHeaders('tenant-a', c.userId, c === ada ? { role: 'admin' } : c === nina ? { groups: ['nurses'] } : {})),
      ...headers,
    },
  })

const listed = async (c: TestClient) => (await c.get('/api/views')).body.views.map((v: { id: number }) => v.id)

describe('groups', () => {
  beforeEach(async () => {
    viewId = (await published({ permissions: ['read'], userGroups: ['nurses'] })).id
  })

  it('shows the view to its owner, a group member and an admin on every read route', async () => {
    for (const c of [w.alice, nina, ada]) {
      expect((await c.get(`/api/views/${viewId}`)).status, c.userId).toBe(200)
      expect((await c.get(`/api/views/${viewId}/rows`)).body.meta.total, c.userId).toBe(2)
      expect((await c.get(`/api/views/${viewId}/sorts`)).status, c.userId).toBe(200)
      expect((await c.get(`/api/views/${viewId}/filters`)).status, c.userId).toBe(200)
      expect((await exportOf(c, viewId)).status, c.userId).toBe(200)
      expect(await listed(c), c.userId).toContain(viewId)
    }
  })

  it('is exactly as if unpublished for a user outside the groups and for another tenant: 404, unlisted, no notification', async () => {
    for (const c of [w.bob, w.eve]) {
      for (const path of [
        `/api/views/${viewId}`,
        `/api/views/${viewId}/rows`,
        `/api/views/${viewId}/sorts`,
        `/api/views/${viewId}/filters`,
      ]) {
        const res = await c.get(path)
        expect(res.status, `${c.userId} ${path}`).toBe(404)
        expect(res.body.code).toBe('NOT_FOUND')
      }
      expect((await exportOf(c, viewId)).status).toBe(404)
      expect(await listed(c)).not.toContain(viewId)
      expect((await c.put(`/api/views/${viewId}/filters`, { filters: [] })).status).toBe(404)
      expect((await c.post(`/api/views/${viewId}/copy`, {})).status).toBe(404)
      expect((await c.delete(`/api/views/${viewId}`)).status).toBe(404)
    }
    const bobs = (await w.bob.get('/api/notifications/views')).body
    expect(bobs.notifications.some((n: { viewId: number }) => n.viewId === viewId)).toBe(false)
    const ninas = (await nina.get('/api/notifications/views')).body
    expect(
      ninas.notifications.some((n: { viewId: number; type: string }) => n.viewId === viewId && n.type === 'VIEW_PUBLISHED'),
    ).toBe(true)
  })

  it('with no userGroups every user of the tenant sees it, as before', async () => {
    const open = await published({ permissions: ['read'], userGroups: [] })
    expect((await w.bob.get(`/api/views/${open.id}/rows`)).status).toBe(200)
    expect(await listed(w.bob)).toContain(open.id)
  })

  it('refuses a token whose groups claim is not a list of names', async () => {
    const iat = Math.floor(Date.now() / 1000)
    const token = await signRaw({ tenantId: 'tenant-a', userId: 'x', iat, exp: iat + 60, groups: 'nurses' })
    const res = await w.t.app.request('/api/views', { headers: { Authorization: `Bearer ${token}` } })
    expect(res.status).toBe(401)
    expect((await res.json()).code).toBe('TOKEN_INVALID')
  })
})

describe('permissions', () => {
  it('read alone: rows and export, but a 403 naming the permission for edit, create, delete and manage', async () => {
    const view = await published({ permissions: ['read'], userGroups: [] })
    const refusals: [Promise<{ status: number; body: { details: { permission: string } } }>, string][] = [
      [nina.put(`/api/views/${view.id}/filters`, { filters: [] }), 'edit'],
      [nina.put(`/api/views/${view.id}/sorts`, { sorts: [] }), 'edit'],
      [nina.put(`/api/views/${view.id}`, { config: { groupBy: ['City'] } }), 'edit'],
      [nina.put(`/api/views/${view.id}`, { name: 'Mine' }), 'manage'],
      [nina.post(`/api/views/${view.id}/copy`, {}), 'create'],
      [nina.delete(`/api/views/${view.id}`), 'delete'],
      [
        nina.post(`/api/views/${view.id}/publish`, { publishConfig: { permissions: ['read', 'edit'], userGroups: [] } }),
        'manage',
      ],
      [nina.post(`/api/views/${view.id}/unpublish`, {}), 'manage'],
    ]
    for (const [call, permission] of refusals) {
      const res = await call
      expect(res.status, permission).toBe(403)
      expect(res.body.details.permission).toBe(permission)
    }
    expect((await nina.get(`/api/views/${view.id}/rows`)).status).toBe(200)
    expect((await exportOf(nina, view.id)).status).toBe(200)
  })

  it('an empty permissions list sees the view but reads no rows', async () => {
    const view = await published({ permissions: [], userGroups: [] })
    expect((await nina.get(`/api/views/${view.id}`)).status).toBe(200)
    const rows = await nina.get(`/api/views/${view.id}/rows`)
    expect(rows.status).toBe(403)
    expect(rows.body.details.permission).toBe('read')
    expect((await exportOf(nina, view.id)).status).toBe(403)
  })

  it('allowDownload false takes exports away from read, not from the owner', async () => {
    const view = await published({ permissions: ['read'], userGroups: [], allowDownload: false })
    expect((await exportOf(nina, view.id)).status).toBe(403)
    expect((await nina.get(`/api/views/${view.id}/rows`)).status).toBe(200)
    expect((await exportOf(w.alice, view.id)).status).toBe(200)
  })

  it('edit changes filters, sorts, columns and grouping, recorded as that user, and tells the owner', async () => {
    const view = await published({ permissions: ['read', 'edit'], userGroups: [] })
    const put = await nina.put(`/api/views/${view.id}/filters`, { filters: [{ columnName: 'Age', operator: 'gt', value: 40 }] })
    expect(put.status).toBe(200)
    expect((await nina.put(`/api/views/${view.id}`, { config: { groupBy: ['City'] } })).status).toBe(200)
    expect((await nina.put(`/api/views/${view.id}/sorts`, { sorts: [{ columnName: 'Age', direction: 'desc' }] })).status).toBe(
      200,
    )
    const changes = (await w.alice.get(`/api/changes/panels?panelId=${w.panelId}&entityType=View&limit=100`)).body.changes
    const mine = changes.filter(
      (c: { entityId: number; userId: string; action: string }) => c.entityId === view.id && c.action === 'UPDATE',
    )
    expect(mine.map((c: { userId: string }) => c.userId)).toEqual(['nina', 'nina', 'nina'])
    const notes = (await w.alice.get('/api/notifications/views')).body.notifications
    expect(notes.some((n: { viewId: number; type: string }) => n.viewId === view.id && n.type === 'VIEW_UPDATED')).toBe(true)
    expect((await nina.put(`/api/views/${view.id}`, { description: 'hers' })).status).toBe(403)
  })

  it('delete lets another user delete the view', async () => {
    const view = await published({ permissions: ['read', 'delete'], userGroups: [] })
    expect((await nina.delete(`/api/views/${view.id}`)).status).toBe(204)
    expect((await w.alice.get(`/api/views/${view.id}`)).status).toBe(404)
  })

  it('manage changes the publish settings, renames and unpublishes', async () => {
    const view = await published({ permissions: ['read', 'manage'], userGroups: [] })
    expect((await nina.put(`/api/views/${view.id}`, { name: 'Renamed by nina' })).status).toBe(200)
    const republished = await nina.post(`/api/views/${view.id}/publish`, {
      publishConfig: { permissions: ['read', 'manage'], userGroups: ['nurses'] },
    })
    expect(republished.status).toBe(200)
    expect(republished.body.publishConfig.userGroups).toEqual(['nurses'])
    expect((await w.bob.get(`/api/views/${view.id}`)).status).toBe(404)
    expect((await nina.post(`/api/views/${view.id}/unpublish`, {})).status).toBe(200)
    expect((await nina.get(`/api/views/${view.id}`)).status).toBe(404)
    expect((await w.alice.get(`/api/views/${view.id}`)).body).toMatchObject({ isPublished: false, name: 'Renamed by nina' })
  })

  it('create saves a copy of her own whose rows and columns stay within the view', async () => {
    const view = await published({ permissions: ['read', 'create'], userGroups: [] })
    const copy = await nina.post(`/api/views/${view.id}/copy`, { name: 'My London list' })
    expect(copy.status, JSON.stringify(copy.body)).toBe(201)
    expect(copy.body).toMatchObject({ name: 'My London list', userId: 'nina', isPublished: false, sourceViewId: view.id })
    // She may change her copy freely, but it never reaches past the view's rows or columns.
    expect((await nina.put(`/api/views/${copy.body.id}`, { filters: [], config: { columns: [] } })).status).toBe(200)
    const rows = await nina.get(`/api/views/${copy.body.id}/rows`)
    expect(rows.status).toBe(200)
    expect(rows.body.meta.total).toBe(2)
    expect(Object.keys(rows.body.data[0]).sort()).toEqual(['City', 'Name', '_id', '_key', '_source'])
    const hidden = await nina.get(
      `/api/views/${copy.body.id}/rows${query({ filters: [{ columnTitle: 'Age', operator: 'gt', value: 1 }] })}`,
    )
    expect(hidden.status).toBe(400)
    expect(hidden.body.details).toEqual([{ path: 'filters[0].columnTitle', message: 'unknown column "Age"' }])
    // Once the view is unpublished her copy reads nothing.
    await w.alice.post(`/api/views/${view.id}/unpublish`, {})
    expect((await nina.get(`/api/views/${copy.body.id}/rows`)).status).toBe(404)
    // The panel's owner copies without a source bound.
    const own = await w.alice.post(`/api/views/${view.id}/copy`, {})
    expect(own.body).toMatchObject({ name: 'London worklist (copy)', sourceViewId: null })
  })

  it('a reader cannot reach columns the view does not show through request filters, sorts or search fields', async () => {
    const view = await published({ permissions: ['read'], userGroups: [] })
    for (const q of [
      { filters: [{ columnTitle: 'Age', operator: 'gt', value: 40 }] },
      { sort: 'Age' },
      { search: '4', searchFields: 'Age' },
    ]) {
      const res = await nina.get(`/api/views/${view.id}/rows${query(q)}`)
      expect(res.status, JSON.stringify(q)).toBe(400)
    }
    expect((await w.alice.get(`/api/views/${view.id}/rows${query({ sort: 'Age' })}`)).status).toBe(200)
  })
})

describe('expiry', () => {
  it('ends the publication at expiresAt for everyone but the owner and admins, recorded once with a notice to the owner', async () => {
    const expiresAt = new Date(w.t.clock.now().getTime() + 3600_000).toISOString()
    const view = await published({ permissions: ['read'], userGroups: [], expiresAt })
    expect((await nina.get(`/api/views/${view.id}/rows`)).status).toBe(200)
    w.t.clock.advance(3600_000)
    expect((await nina.get(`/api/views/${view.id}/rows`)).status).toBe(404)
    expect((await nina.get(`/api/views/${view.id}`)).status).toBe(404)
    expect(await listed(nina)).not.toContain(view.id)
    const owner = await w.alice.get(`/api/views/${view.id}`)
    expect(owner.body).toMatchObject({ isPublished: false, publishedAt: null })
    expect((await ada.get(`/api/views/${view.id}/rows`)).status).toBe(200)
    await runMaintenanceTick(w.t.deps, w.t.clock.now())
    const changes = (await w.alice.get(`/api/changes/panels?panelId=${w.panelId}&entityType=View&limit=100`)).body.changes
    const ended = changes.filter(
      (c: { entityId: number; userId: string; changes: { isPublished?: unknown } }) =>
        c.entityId === view.id && c.userId === 'system',
    )
    expect(ended).toHaveLength(1)
    expect(ended[0].changes.isPublished).toEqual({ oldValue: true, newValue: false })
    const notes = (await w.alice.get('/api/notifications/views')).body.notifications.filter(
      (n: { viewId: number; message: string }) => n.viewId === view.id && n.message.includes('expiry'),
    )
    expect(notes).toHaveLength(1)
  })

  it('the scheduler ends a publication nobody reads', async () => {
    const expiresAt = new Date(w.t.clock.now().getTime() + 60_000).toISOString()
    const view = await published({ permissions: ['read'], userGroups: [], expiresAt })
    w.t.clock.advance(120_000)
    const report = await runMaintenanceTick(w.t.deps, w.t.clock.now())
    expect(report.expired).toBeGreaterThanOrEqual(1)
    const [row] = await w.t.client
      .execute({ sql: 'SELECT is_published FROM views WHERE id = ?', args: [view.id] })
      .then((r) => r.rows)
    expect(Number(row.is_published)).toBe(0)
  })
})

describe('password', () => {
  it('needs a password given once at publish, never answered', async () => {
    const view = await w.alice.post('/api/views', { name: 'Locked', panelId: w.panelId })
    const missing = await w.alice.post(`/api/views/${view.body.id}/publish`, {
      publishConfig: { permissions: ['read'], userGroups: [], passwordProtected: true },
    })
    expect(missing.status).toBe(400)
    expect(missing.body.details.map((d: { path: string }) => d.path)).toEqual(['publishConfig.password'])
    const res = await w.alice.post(`/api/views/${view.body.id}/publish`, {
      publishConfig: { permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' },
    })
    expect(res.status).toBe(200)
    expect(res.body.publishConfig).toEqual({ permissions: ['read'], userGroups: [], passwordProtected: true })
    const everything = JSON.stringify([
      res.body,
      (await w.alice.get(`/api/views/${view.body.id}`)).body,
      (await w.alice.get(`/api/changes/panels?panelId=${w.panelId}&limit=100`)).body,
    ])
    expect(everything).not.toContain('correct horse')
    expect(everything).not.toContain('pbkdf2')
    const [stored] = await w.t.client
      .execute({ sql: 'SELECT publish_config FROM views WHERE id = ?', args: [view.body.id] })
      .then((r) => r.rows)
    expect(String(stored.publish_config)).toMatch(/"passwordHash":"pbkdf2-sha256\$100000\$/)
    expect(String(stored.publish_config)).not.toContain('correct horse')
  })

  it('other users send it in X-View-Password: missing and wrong ones are 403s with their own codes, wrong ones then rate-limited', async () => {
    const view = await published({ permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' })
    expect((await w.alice.get(`/api/views/${view.id}/rows`)).status).toBe(200)
    expect(await listed(nina)).toContain(view.id)
    const none = await nina.get(`/api/views/${view.id}/rows`)
    expect(none.status).toBe(403)
    expect(none.body.code).toBe('VIEW_PASSWORD_REQUIRED')
    const wrong = await nina.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'wrong horse' })
    expect(wrong.status).toBe(403)
    expect(wrong.body.code).toBe('VIEW_PASSWORD_INVALID')
    const right = await nina.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'correct horse' })
    expect(right.status).toBe(200)
    expect((await exportOf(nina, view.id, { 'X-View-Password': 'correct horse' })).status).toBe(200)
    for (let i = 0; i < 4; i++) await nina.get(`/api/views/${view.id}`, { 'X-View-Password': `guess ${i}` })
    const limited = await nina.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'correct horse' })
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    // Per user and view: bob, another reader, is not held back by nina's failures.
    expect((await w.bob.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'correct horse' })).status).toBe(200)
    w.t.clock.advance(16 * 60_000)
    expect((await nina.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'correct horse' })).status).toBe(200)
  })

  it('does not count requests that send no password: after many of them the right password still works', async () => {
    const view = await published({ permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' })
    for (let i = 0; i < 8; i++) {
      const none = await nina.get(`/api/views/${view.id}${i % 2 ? '/rows' : ''}`)
      expect(none.status).toBe(403)
      expect(none.body.code).toBe('VIEW_PASSWORD_REQUIRED')
    }
    for (let i = 0; i < 2; i++) {
      expect((await nina.get(`/api/views/${view.id}`, { 'X-View-Password': `typo ${i}` })).body.code).toBe(
        'VIEW_PASSWORD_INVALID',
      )
    }
    expect((await nina.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'correct horse' })).status).toBe(200)
  })

  it('evaluates at most 5 of 50 wrong guesses sent at once and answers the rest 429', async () => {
    const view = await published({ permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' })
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => nina.get(`/api/views/${view.id}`, { 'X-View-Password': `guess ${i}` })),
    )
    const statuses = answers.map((a) => a.status)
    expect(statuses.filter((s) => s === 403)).toHaveLength(5)
    expect(statuses.filter((s) => s === 429)).toHaveLength(45)
    const limited = answers.find((a) => a.status === 429)!
    expect(limited.body).toMatchObject({ statusCode: 429, code: 'RATE_LIMITED', error: 'Too Many Requests' })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await nina.get(`/api/views/${view.id}/rows`, { 'X-View-Password': 'correct horse' })).status).toBe(429)
  })

  it('gives back the slot of a right password, so right ones sent at once never add to the count', async () => {
    const view = await published({ permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' })
    const guess = (password: string) => nina.get(`/api/views/${view.id}`, { 'X-View-Password': password })
    for (const typo of ['typo 1', 'typo 2']) expect((await guess(typo)).status).toBe(403)
    const right = await Promise.all([guess('correct horse'), guess('correct horse'), guess('correct horse')])
    expect(right.map((r) => r.status)).toEqual([200, 200, 200])
    const counted = await w.t.client.execute({
      sql: 'SELECT count FROM view_password_failures WHERE view_id = ? AND user_id = ?',
      args: [view.id, 'nina'],
    })
    expect(Number(counted.rows[0].count)).toBe(2)
    for (const typo of ['typo 3', 'typo 4', 'typo 5']) expect((await guess(typo)).status).toBe(403)
    expect((await guess('typo 6')).status).toBe(429)
  })

  it('deletes counts whose window ended in the scheduler step', async () => {
    const view = await published({ permissions: ['read'], userGroups: [], passwordProtected: true, password: 'correct horse' })
    await runMaintenanceTick(w.t.deps)
    await nina.get(`/api/views/${view.id}`, { 'X-View-Password': 'wrong' })
    const countRows = async () =>
      Number(
        (await w.t.client.execute({ sql: 'SELECT COUNT(*) AS n FROM view_password_failures WHERE view_id = ?', args: [view.id] }))
          .rows[0].n,
      )
    expect(await countRows()).toBe(1)
    expect((await runMaintenanceTick(w.t.deps)).passwordFailuresPruned).toBe(0)
    w.t.clock.advance(15 * 60_000)
    // Counts of the other tests' views that ended at the same time go too.
    expect((await runMaintenanceTick(w.t.deps)).passwordFailuresPruned).toBeGreaterThanOrEqual(1)
    expect(await countRows()).toBe(0)
  })
})

describe('default view and titles', () => {
  it('isDefault marks one published view per panel, named by the panel', async () => {
    const a = await published({ permissions: ['read'], userGroups: [], isDefault: true })
    expect((await w.alice.get(`/api/panels/${w.panelId}`)).body.defaultViewId).toBe(a.id)
    const b = await published({ permissions: ['read'], userGroups: [], isDefault: true })
    expect((await w.alice.get(`/api/panels/${w.panelId}`)).body.defaultViewId).toBe(b.id)
    expect((await w.alice.get(`/api/views/${a.id}`)).body.publishConfig.isDefault).toBe(false)
    await w.alice.post(`/api/views/${b.id}/unpublish`, {})
    expect((await w.alice.get(`/api/panels/${w.panelId}`)).body.defaultViewId).toBeNull()
    const c = await published({ permissions: ['read'], userGroups: [], isDefault: true })
    expect((await w.alice.get(`/api/panels/${w.panelId}`)).body.defaultViewId).toBe(c.id)
    expect((await w.alice.delete(`/api/views/${c.id}`)).status).toBe(204)
    expect((await w.alice.get(`/api/panels/${w.panelId}`)).body.defaultViewId).toBeNull()
  })

  it('other users see publishedTitle and description; the owner sees the view as named', async () => {
    const view = await published({
      permissions: ['read'],
      userGroups: [],
      publishedTitle: 'Ward 3 follow-up',
      description: 'For the ward',
    })
    expect((await nina.get(`/api/views/${view.id}`)).body).toMatchObject({
      name: 'Ward 3 follow-up',
      description: 'For the ward',
    })
    const inList = (await nina.get('/api/views')).body.views.find((v: { id: number }) => v.id === view.id)
    expect(inList).toMatchObject({ name: 'Ward 3 follow-up', description: 'For the ward' })
    expect((await w.alice.get(`/api/views/${view.id}`)).body).toMatchObject({
      name: 'London worklist',
      description: 'internal notes',
    })
  })
})

describe('groups with AUTH_DISABLED', () => {
  it('takes the groups from X-User-Groups, else from DEV_USER_GROUPS', async () => {
    const { makeTestApp } = await import('../../helpers/app.ts')
    const t = await makeTestApp({ env: { AUTH_DISABLED: 'true', DEV_USER_GROUPS: 'cardio' } })
    const call = async (path: string, body?: unknown, groups?: string) => {
      const headers: Record<string, string> = { 'Content-Type': 'application/json' }
      if (groups !== undefined) headers['X-User-Groups'] = groups
      const res = await t.app.request(path, {
        method: body ? 'POST' : 'GET',
        headers,
        body: body ? JSON.stringify(body) : undefined,
      })
      return { status: res.status, body: await res.json() }
    }
    const panel = await call('/api/panels', { name: 'P', tenantId: 'dev-tenant', userId: 'owner' })
    const view = await call('/api/views', { name: 'V', panelId: panel.body.id, userId: 'owner' })
    const publish = { userId: 'owner', publishConfig: { permissions: ['read'], userGroups: ['nurses', 'cardio'] } }
    expect((await call(`/api/views/${view.body.id}/publish`, publish)).status).toBe(200)
    expect((await call(`/api/views/${view.body.id}?userId=someone`, undefined, 'nurses')).status).toBe(200)
    expect((await call(`/api/views/${view.body.id}?userId=someone`, undefined, 'ward-9')).status).toBe(404)
    // No header: DEV_USER_GROUPS (cardio) applies.
    expect((await call(`/api/views/${view.body.id}?userId=someone`)).status).toBe(200)
  })
})
