import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Who may do what with a row's work (WORKLIST.md §3; docs/worklist.md "Who may do what"), tried on
 * published views of alice's panel (City = London: p1 Ada and p5 Zoe) with the owner (alice), a
 * tenant admin (ada), readers given read, edit or manage (nina, bob), and another tenant (eve).
 * Rows: tests/modules/rows/fixtures.ts PATIENTS.
 */

let w: RowsWorld
let nina: TestClient
let ada: TestClient

beforeAll(async () => {
  w = await rowsWorld()
  nina = clientFor(w.t.app, 'tenant-a', 'nina')
  ada = clientFor(w.t.app, 'tenant-a', 'ada', { role: 'admin' })
})
afterAll(() => w.server.close())

/** A fresh view of alice's (City = London), published with `publishConfig`; its id. */
async function published(publishConfig: Record<string, unknown>): Promise<number> {
  const view = await w.alice.post('/api/views', {
    name: 'London worklist',
    panelId: w.panelId,
    filters: [{ columnTitle: 'City', operator: 'equals', value: 'london' }],
    config: { columns: ['Name', 'City', '_status', '_assignee'] },
  })
  expect(view.status, JSON.stringify(view.body)).toBe(201)
  const res = await w.alice.post(`/api/views/${view.body.id}/publish`, { publishConfig: { userGroups: [], ...publishConfig } })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return view.body.id
}

const WORK_FIELDS = [
  'assignee',
  'claimExpiresAt',
  'claimedAt',
  'commentCount',
  'dueAt',
  'snoozedUntil',
  'status',
  'updatedAt',
  'updatedBy',
  'version',
]

const at = (viewId: number, rowId: number) => `/api/views/${viewId}/rows/${rowId}`

/** The stored work state of a row, read as its panel's owner. */
async function stored(rowId: number) {
  const res = await w.alice.get(`/api/panels/${w.panelId}/rows/${rowId}`)
  expect(res.status).toBe(200)
  return res.body._work
}

/** Frees a row whatever holds it (the panel's owner may release any claim). */
async function free(rowId: number) {
  expect((await w.alice.post(`/api/panels/${w.panelId}/rows/${rowId}/release`, {})).status).toBe(200)
}

/** Every work endpoint of a row under a view, with a harmless body. */
const everyEndpoint = (
  viewId: number,
  rowId: number,
): [string, (c: TestClient, h?: Record<string, string>) => Promise<any>][] => [
  ['GET', (c, h) => c.get(at(viewId, rowId), h)],
  ['PATCH', (c, h) => c.patch(`${at(viewId, rowId)}/work`, { status: 'in_progress' }, h)],
  ['claim', (c, h) => c.post(`${at(viewId, rowId)}/claim`, {}, h)],
  ['release', (c, h) => c.post(`${at(viewId, rowId)}/release`, {}, h)],
]

describe('the owner and tenant admins may do everything', () => {
  it('under the panel and under a view nobody else reads', async () => {
    const viewId = await published({ permissions: ['read'] })
    for (const [who, c] of [
      ['alice', w.alice],
      ['ada', ada],
    ] as const) {
      for (const base of [`/api/panels/${w.panelId}/rows/${w.ids.p1}`, at(viewId, w.ids.p1)]) {
        const claim = await c.post(`${base}/claim`, {})
        expect(claim.status, `${who} ${base}`).toBe(200)
        expect(claim.body._work.assignee).toBe(who)
        expect(Object.keys(claim.body._work).sort()).toEqual(WORK_FIELDS)
        const patch = await c.patch(`${base}/work`, { status: 'in_progress', dueAt: '2031-01-01T00:00:00Z' })
        expect(patch.status, `${who} ${base}`).toBe(200)
        // Assign anyone, and release anyone's claim.
        const assigned = await c.patch(`${base}/work`, { assignee: 'somebody' })
        expect(assigned.status).toBe(200)
        expect(assigned.body._work.assignee).toBe('somebody')
        const released = await c.post(`${base}/release`, {})
        expect(released.status).toBe(200)
        expect(released.body._work.assignee).toBeNull()
      }
    }
    const next = await ada.post(`/api/views/${viewId}/next`, {})
    expect(next.status, JSON.stringify(next.body)).toBe(200)
    await free(next.body._id)
  })
})

describe('read alone', () => {
  it('reads the row and its work state; every change and next are 403s naming edit, and change nothing', async () => {
    const viewId = await published({ permissions: ['read'] })
    const got = await nina.get(at(viewId, w.ids.p5))
    expect(got.status, JSON.stringify(got.body)).toBe(200)
    expect(got.body).toMatchObject({ _id: w.ids.p5, Name: 'Zoe', _work: { status: expect.any(String) } })
    expect(got.headers.get('etag')).toMatch(/^"\d+"$/)
    // Columns the view does not show stay hidden in the one-row answer too.
    expect(got.body.Age).toBeUndefined()
    const before = await stored(w.ids.p5)
    for (const call of [
      nina.patch(`${at(viewId, w.ids.p5)}/work`, { status: 'done' }),
      nina.post(`${at(viewId, w.ids.p5)}/claim`, {}),
      nina.post(`${at(viewId, w.ids.p5)}/release`, {}),
      nina.post(`/api/views/${viewId}/next`, {}),
    ]) {
      const res = await call
      expect(res.status, JSON.stringify(res.body)).toBe(403)
      expect(res.body.details.permission).toBe('edit')
    }
    expect(await stored(w.ids.p5)).toEqual(before)
  })

  it('a view whose permissions are empty shows no row: 403 naming read, as its rows list does', async () => {
    const viewId = await published({ permissions: [] })
    const res = await nina.get(at(viewId, w.ids.p1))
    expect(res.status).toBe(403)
    expect(res.body.details.permission).toBe('read')
    expect((await nina.get(`/api/views/${viewId}/rows`)).status).toBe(403)
  })
})

describe('edit', () => {
  it('claims, releases its own claim, and changes status, dueAt and snoozedUntil', async () => {
    const viewId = await published({ permissions: ['read', 'edit'] })
    const claim = await nina.post(`${at(viewId, w.ids.p1)}/claim`, { leaseSeconds: 600 })
    expect(claim.status, JSON.stringify(claim.body)).toBe(200)
    expect(claim.body._work.assignee).toBe('nina')
    const patch = await nina.patch(`${at(viewId, w.ids.p1)}/work`, {
      status: 'in_progress',
      dueAt: '2031-02-01T00:00:00Z',
      snoozedUntil: '2031-01-01T00:00:00Z',
    })
    expect(patch.status, JSON.stringify(patch.body)).toBe(200)
    expect(patch.body._work).toMatchObject({
      status: 'in_progress',
      dueAt: '2031-02-01T00:00:00.000Z',
      snoozedUntil: '2031-01-01T00:00:00.000Z',
      assignee: 'nina',
      updatedBy: 'nina',
    })
    const released = await nina.post(`${at(viewId, w.ids.p1)}/release`, {})
    expect(released.status).toBe(200)
    expect(released.body._work.assignee).toBeNull()
    await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p1}/work`, { snoozedUntil: null, status: 'open' })
  })

  it('sets assignee to herself, or to null while she holds the claim; anything else is a 403', async () => {
    const viewId = await published({ permissions: ['read', 'edit'] })
    const row = at(viewId, w.ids.p1)
    const self = await nina.patch(`${row}/work`, { assignee: 'nina' })
    expect(self.status, JSON.stringify(self.body)).toBe(200)
    expect(self.body._work).toMatchObject({ assignee: 'nina', claimExpiresAt: null })
    const other = await nina.patch(`${row}/work`, { assignee: 'bob' })
    expect(other.status).toBe(403)
    const unassigned = await nina.patch(`${row}/work`, { assignee: null })
    expect(unassigned.status).toBe(200)
    expect(unassigned.body._work.assignee).toBeNull()
    // bob holds it now: nina may neither unassign him nor take it by assigning herself.
    expect((await w.bob.post(`${row}/claim`, {})).status).toBe(200)
    const before = await stored(w.ids.p1)
    const unassignBob = await nina.patch(`${row}/work`, { assignee: null })
    expect(unassignBob.status).toBe(403)
    const takeover = await nina.patch(`${row}/work`, { assignee: 'nina' })
    expect(takeover.status, JSON.stringify(takeover.body)).toBe(403)
    for (const refused of [other, unassignBob, takeover]) expect(refused.body.details.permission).toBe('manage')
    expect(await stored(w.ids.p1)).toEqual(before)
    await free(w.ids.p1)
  })

  it('releasing someone else’s claim is a 403 that leaves it held', async () => {
    const viewId = await published({ permissions: ['read', 'edit'] })
    expect((await w.bob.post(`${at(viewId, w.ids.p5)}/claim`, {})).status).toBe(200)
    const res = await nina.post(`${at(viewId, w.ids.p5)}/release`, {})
    expect(res.status).toBe(403)
    expect(res.body.details.permission).toBe('manage')
    expect((await stored(w.ids.p5)).assignee).toBe('bob')
    await free(w.ids.p5)
  })

  it('next claims for her', async () => {
    const viewId = await published({ permissions: ['read', 'edit'] })
    const next = await nina.post(`/api/views/${viewId}/next`, {})
    expect(next.status, JSON.stringify(next.body)).toBe(200)
    expect(next.body._work.assignee).toBe('nina')
    await free(next.body._id)
  })
})

describe('manage', () => {
  it('assigns anyone and releases any claim', async () => {
    const viewId = await published({ permissions: ['read', 'edit', 'manage'] })
    expect((await w.bob.post(`${at(viewId, w.ids.p5)}/claim`, {})).status).toBe(200)
    const released = await nina.post(`${at(viewId, w.ids.p5)}/release`, {})
    expect(released.status, JSON.stringify(released.body)).toBe(200)
    expect(released.body._work.assignee).toBeNull()
    const assigned = await nina.patch(`${at(viewId, w.ids.p5)}/work`, { assignee: 'bob' })
    expect(assigned.status).toBe(200)
    expect(assigned.body._work.assignee).toBe('bob')
    await free(w.ids.p5)
  })
})

describe('rows the path does not answer are 404s on every endpoint', () => {
  it('a row the view filters out: 404 for every reader, even where a 403 would otherwise come first', async () => {
    const readOnly = await published({ permissions: ['read'] })
    const editable = await published({ permissions: ['read', 'edit', 'manage'] })
    const before = await stored(w.ids.p2)
    for (const viewId of [readOnly, editable]) {
      for (const [name, call] of everyEndpoint(viewId, w.ids.p2)) {
        for (const c of [nina, w.alice]) {
          const res = await call(c)
          expect(res.status, `${c.userId} ${name} on view ${viewId}`).toBe(404)
          expect(res.body.code).toBe('NOT_FOUND')
        }
      }
    }
    expect(await stored(w.ids.p2)).toEqual(before)
  })

  it('another panel’s row, another tenant’s row, an unknown row and an unknown view', async () => {
    const viewId = await published({ permissions: ['read', 'edit', 'manage'] })
    // A second panel of alice's over the same patients: its rows have their own ids.
    const other = await w.alice.post('/api/panels', { name: 'Other clinic', tenantId: 'tenant-a', userId: 'alice' })
    const source = await w.alice.post(`/api/panels/${other.body.id}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${w.server.url}/patients`, keyField: 'id' },
    })
    expect(source.status, JSON.stringify(source.body)).toBe(201)
    const [otherRow] = (
      await w.t.client.execute({ sql: "SELECT row_id FROM records WHERE panel_id = ? AND key = 'p1'", args: [other.body.id] })
    ).rows
    const otherId = Number(otherRow.row_id)
    expect(otherId).not.toBe(w.ids.p1)
    // Eve's own panel, in tenant-b.
    const evePanel = await w.eve.post('/api/panels', { name: 'Eve', tenantId: 'tenant-b', userId: 'eve' })
    const cases: [TestClient, string][] = [
      [w.alice, `/api/panels/${w.panelId}/rows/${otherId}`],
      [w.alice, at(viewId, otherId)],
      [nina, at(viewId, otherId)],
      [w.eve, `/api/panels/${w.panelId}/rows/${w.ids.p1}`],
      [w.eve, `/api/panels/${evePanel.body.id}/rows/${w.ids.p1}`],
      [w.eve, at(viewId, w.ids.p1)],
      [w.alice, `/api/panels/${w.panelId}/rows/999999`],
      [nina, at(999999, w.ids.p1)],
    ]
    for (const [c, base] of cases) {
      for (const [name, res] of [
        ['GET', await c.get(base)],
        ['PATCH', await c.patch(`${base}/work`, { status: 'in_progress' })],
        ['claim', await c.post(`${base}/claim`, {})],
        ['release', await c.post(`${base}/release`, {})],
      ] as const) {
        expect(res.status, `${c.userId} ${name} ${base}`).toBe(404)
      }
    }
    for (const c of [w.eve, nina]) expect((await c.post('/api/views/999999/next', {})).status).toBe(404)
    expect((await w.eve.post(`/api/views/${viewId}/next`, {})).status).toBe(404)
    expect((await stored(w.ids.p1)).status).toBe('open')
  })

  it('an unpublished view: 404 for readers, everything still for its owner', async () => {
    const viewId = await published({ permissions: ['read', 'edit', 'manage'] })
    expect((await w.alice.post(`/api/views/${viewId}/unpublish`, {})).status).toBe(200)
    for (const [name, call] of everyEndpoint(viewId, w.ids.p1)) {
      expect((await call(nina)).status, name).toBe(404)
    }
    expect((await nina.post(`/api/views/${viewId}/next`, {})).status).toBe(404)
    expect((await w.alice.get(at(viewId, w.ids.p1))).status).toBe(200)
  })

  it('a password-protected view needs X-View-Password on every endpoint', async () => {
    const viewId = await published({ permissions: ['read', 'edit'], passwordProtected: true, password: 'correct horse' })
    for (const [name, call] of everyEndpoint(viewId, w.ids.p5)) {
      const res = await call(nina)
      expect(res.status, name).toBe(403)
      expect(res.body.code, name).toBe('VIEW_PASSWORD_REQUIRED')
    }
    const next = await nina.post(`/api/views/${viewId}/next`, {})
    expect(next.body.code).toBe('VIEW_PASSWORD_REQUIRED')
    const password = { 'X-View-Password': 'correct horse' }
    for (const [name, call] of everyEndpoint(viewId, w.ids.p5)) {
      const res = await call(nina, password)
      expect(res.status, `${name} ${JSON.stringify(res.body)}`).toBe(200)
    }
    await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p5}/work`, { status: 'open' })
  })
})

describe('a copy made with create gives no more than its source', () => {
  it('a copy of a read-and-create view reads rows but cannot claim, change or next', async () => {
    const source = await published({ permissions: ['read', 'create'] })
    const copy = await nina.post(`/api/views/${source}/copy`, { name: 'Mine' })
    expect(copy.status, JSON.stringify(copy.body)).toBe(201)
    expect(copy.body.sourceViewId).toBe(source)
    expect((await nina.get(at(copy.body.id, w.ids.p1))).status).toBe(200)
    for (const res of [
      await nina.post(`${at(copy.body.id, w.ids.p1)}/claim`, {}),
      await nina.patch(`${at(copy.body.id, w.ids.p1)}/work`, { status: 'done' }),
      await nina.post(`/api/views/${copy.body.id}/next`, {}),
    ]) {
      expect(res.status, JSON.stringify(res.body)).toBe(403)
      expect(res.body.details.permission).toBe('edit')
    }
    // Her copy never reaches past the source's rows, whatever its own filters say.
    expect((await nina.put(`/api/views/${copy.body.id}/filters`, { filters: [] })).status).toBe(200)
    expect((await nina.get(at(copy.body.id, w.ids.p2))).status).toBe(404)
  })

  it('a copy of an editable view lets her claim; once the source is unpublished it answers 404', async () => {
    const source = await published({ permissions: ['read', 'edit', 'create'] })
    const copy = await nina.post(`/api/views/${source}/copy`, {})
    const claim = await nina.post(`${at(copy.body.id, w.ids.p1)}/claim`, {})
    expect(claim.status, JSON.stringify(claim.body)).toBe(200)
    // No manage on the source: she may not assign bob, even on her own copy.
    expect((await nina.patch(`${at(copy.body.id, w.ids.p1)}/work`, { assignee: 'bob' })).status).toBe(403)
    await w.alice.post(`/api/views/${source}/unpublish`, {})
    expect((await nina.post(`${at(copy.body.id, w.ids.p1)}/release`, {})).status).toBe(404)
    await free(w.ids.p1)
  })

  it('a copy she publishes gives her readers no more than the copy and than the source give them', async () => {
    const source = await published({ permissions: ['read', 'edit', 'create'] })
    const copy = await nina.post(`/api/views/${source}/copy`, {})
    // She publishes her copy with read only: bob, whom the source would let edit, may only read.
    const pub = await nina.post(`/api/views/${copy.body.id}/publish`, {
      publishConfig: { permissions: ['read'], userGroups: [] },
    })
    expect(pub.status, JSON.stringify(pub.body)).toBe(200)
    expect((await w.bob.get(at(copy.body.id, w.ids.p5))).status).toBe(200)
    const claim = await w.bob.post(`${at(copy.body.id, w.ids.p5)}/claim`, {})
    expect(claim.status, JSON.stringify(claim.body)).toBe(403)
    // Republished with manage: the source gives bob no manage, so he may still not assign others.
    await nina.post(`/api/views/${copy.body.id}/publish`, {
      publishConfig: { permissions: ['read', 'edit', 'manage'], userGroups: [] },
    })
    expect((await w.bob.post(`${at(copy.body.id, w.ids.p5)}/claim`, {})).status).toBe(200)
    expect((await w.bob.patch(`${at(copy.body.id, w.ids.p5)}/work`, { assignee: 'nina' })).status).toBe(403)
    await free(w.ids.p5)
  })
})

describe('expiry', () => {
  it('a publication past its expiresAt answers 404 on every endpoint (this test moves the clock: keep it last)', async () => {
    const expiresAt = new Date(w.t.clock.now().getTime() + 3600_000).toISOString()
    const viewId = await published({ permissions: ['read', 'edit'], expiresAt })
    expect((await nina.get(at(viewId, w.ids.p1))).status).toBe(200)
    w.t.clock.advance(3600_000)
    for (const [name, call] of everyEndpoint(viewId, w.ids.p1)) {
      expect((await call(nina)).status, name).toBe(404)
    }
    expect((await nina.post(`/api/views/${viewId}/next`, {})).status).toBe(404)
  })
})
