import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { PATIENTS, query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * A view's stored members keep up with every writer (docs/views-and-rows.md "Access paths"): a
 * re-sync that changes a sorted column the view does not show, a work change of a sorted virtual
 * column, time passing under a view that reads `_overdue`. The page from the members is then the
 * row query's page, and the stored count the query's count; where the members may be behind (time
 * the scheduler has not applied yet) or mean something else for the reader (`@me`, a copy read
 * by the panel's owner), the row query answers.
 */

const HOUR = 3_600_000
// The fixture server answers this array: changed in place for a re-sync.
const patients: Record<string, unknown>[] = PATIENTS.map((p) => ({ ...p }))
let w: RowsWorld

beforeAll(async () => {
  w = await rowsWorld(patients)
})
afterAll(() => w.server.close())

const EVERY_ROW = [{ columnTitle: 'Name', operator: 'isNotEmpty' }]

async function page(viewId: number, params: Record<string, unknown> = {}, as = w.alice) {
  const res = await as.get(`/api/views/${viewId}/rows${query({ limit: '100', ...params })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return {
    keys: res.body.data.map((r: { _key: string }) => r._key) as string[],
    total: res.body.meta.total as number,
    path: res.headers.get('server-timing'),
  }
}

/** The members' page equals the row query's; returns the keys. */
async function agreed(viewId: number): Promise<string[]> {
  const stored = await page(viewId)
  const queried = await page(viewId, { filters: EVERY_ROW })
  expect(stored.path).toBe('rows;desc="members"')
  expect(queried.path).toBe('rows;desc="query"')
  expect(stored.keys).toEqual(queried.keys)
  expect(stored.total).toBe(queried.total)
  return stored.keys
}

async function view(body: Record<string, unknown>, as = w.alice): Promise<number> {
  const res = await as.post('/api/views', { panelId: w.panelId, name: 'V', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body.id
}

async function storedCounts(): Promise<{ id: number; stored: number | null; actual: number }[]> {
  const rows = await w.t.deps.db.all<{ id: number; stored: number | null; actual: number }>(
    sql`SELECT v.id, v.member_count AS stored, (SELECT count(*) FROM view_members m WHERE m.view_id = v.id) AS actual FROM views v`,
  )
  return rows.map((r) => ({ id: Number(r.id), stored: r.stored === null ? null : Number(r.stored), actual: Number(r.actual) }))
}

describe('stored members follow the writes', () => {
  it('a re-sync that changes a sorted column the view does not show re-sorts the members', async () => {
    const id = await view({ config: { columns: ['Name'] }, sorting: [{ columnTitle: 'Age', direction: 'desc' }] })
    expect(await agreed(id)).toEqual(['p6', 'p2', 'p3', 'p1', 'p5', 'p4'])
    const ada = patients.find((p) => p.id === 'p1') as Record<string, unknown>
    ada.age = 99
    const zoe = patients.find((p) => p.id === 'p5') as Record<string, unknown>
    zoe.city = 'Rome'
    const sync = await w.alice.post(`/api/datasources/${w.sourceId}/sync`)
    expect(sync.status, JSON.stringify(sync.body)).toBeLessThan(300)
    expect(await agreed(id)).toEqual(['p1', 'p6', 'p2', 'p3', 'p5', 'p4'])
  })

  it('a change of work state re-sorts a view sorted by _status, and moves the count of one filtered on it', async () => {
    const sorted = await view({ sorting: [{ columnTitle: '_status', direction: 'desc' }] })
    const open = await view({ filters: [{ columnTitle: '_status', operator: 'equals', value: 'open' }] })
    expect((await agreed(open)).length).toBe(6)
    const res = await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p4}/work`, { status: 'in_progress' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect((await agreed(sorted))[5]).toBe('p4') // 'open' (5 rows) before 'in_progress', descending
    expect(await agreed(open)).not.toContain('p4')
    expect((await page(open)).total).toBe(5)
  })

  it('time the scheduler has not applied yet: the row query answers; after its step, the members again', async () => {
    const overdue = await view({ filters: [{ columnTitle: '_overdue', operator: 'equals', value: true }] })
    const shown = await view({ config: { columns: ['Name', '_overdue'] } })
    expect(await agreed(overdue)).toEqual([])
    const due = new Date(w.t.clock.now().getTime() + HOUR).toISOString()
    expect((await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p2}/work`, { dueAt: due })).status).toBe(200)
    expect(await agreed(overdue)).toEqual([])
    w.t.clock.advance(2 * HOUR)
    const behind = await page(overdue)
    expect(behind.path).toBe('rows;desc="query"')
    expect(behind.keys).toEqual(['p2'])
    // A view that only shows `_overdue` holds the same rows in the same order: its members answer, the value read now.
    const showing = await w.alice.get(`/api/views/${shown}/rows?limit=100`)
    expect(showing.headers.get('server-timing')).toBe('rows;desc="members"')
    expect(showing.body.data.find((r: { _key: string }) => r._key === 'p2')._overdue).toBe(true)
    await runMaintenanceTick(w.t.deps, w.t.clock.now())
    expect(await agreed(overdue)).toEqual(['p2'])
  })

  it('the stored count of every view equals its members after all of it', async () => {
    for (const c of await storedCounts()) expect(c.stored, `view ${c.id}`).toBe(c.actual)
  })
})

describe('who the members answer', () => {
  it('a published view read by another user of the tenant: the members; an @me view read by them: the row query', async () => {
    const london = await view({ filters: [{ columnTitle: 'City', operator: 'equals', value: 'London' }] })
    const mine = await view({ filters: [{ columnTitle: '_assignee', operator: 'equals', value: '@me' }] })
    for (const id of [london, mine]) {
      const res = await w.alice.post(`/api/views/${id}/publish`, { publishConfig: { userGroups: [], permissions: ['read'] } })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
    }
    const read = await page(london, {}, w.bob)
    expect(read.path).toBe('rows;desc="members"')
    expect(read.keys).toEqual(['p1'])
    const others = await page(mine, {}, w.bob)
    expect(others.path).toBe('rows;desc="query"')
    expect((await page(mine)).path).toBe('rows;desc="members"')
  })

  it('a copy read by its owner, held to the filters of the view it was copied from: the members', async () => {
    const source = await view({ filters: [{ columnTitle: 'Active', operator: 'equals', value: true }] })
    const pub = await w.alice.post(`/api/views/${source}/publish`, {
      publishConfig: { userGroups: [], permissions: ['read', 'create'] },
    })
    expect(pub.status, JSON.stringify(pub.body)).toBe(200)
    const copy = await w.bob.post(`/api/views/${source}/copy`, { name: 'Mine' })
    expect(copy.status, JSON.stringify(copy.body)).toBe(201)
    const put = await w.bob.put(`/api/views/${copy.body.id}`, {
      filters: [{ columnTitle: 'City', operator: 'equals', value: 'London' }],
    })
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    const bobs = await page(copy.body.id, {}, w.bob)
    expect(bobs.path).toBe('rows;desc="members"')
    expect(bobs.keys).toEqual(['p1'])
    expect((await page(copy.body.id, { filters: EVERY_ROW }, w.bob)).keys).toEqual(['p1'])
  })
})
