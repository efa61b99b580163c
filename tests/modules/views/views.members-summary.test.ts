import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * A view's groups and aggregations from its stored members (docs/views-and-rows.md "Access paths"):
 * each member of a view that groups or aggregates keeps the group values and the aggregated values
 * (member-summary.ts), and the summary is read from them. It must equal the row query's summary
 * over the panel, for values of every kind (numbers, texts read as numbers, letters in both cases,
 * blanks of each kind, arrays), every function, after re-syncs that change those values and after
 * changes of work state; `Server-Timing` says where each came from.
 */

const SOURCE = [
  { id: 'a', v: 10, w: 'x', t: 'abc' },
  { id: 'b', v: 'ten', w: 'X', t: 'ABC' },
  { id: 'c', v: '', w: 'x', t: 'ab' },
  { id: 'd', v: null, w: 'y', t: 'abcd' },
  { id: 'e', v: [], w: '', t: 'Abd' },
  { id: 'f', v: -3.5, w: 'z', t: 'é' },
  { id: 'g', v: 'Ten', w: 'z', t: '' },
  { id: 'h', v: 'tEN', w: [], t: null },
  { id: 'i', v: 2, w: 'y', t: 'b' },
  { id: 'j', v: [7, 1], w: 'x', t: 'B' },
  { id: 'k', v: 'apple', t: 'a' },
  { id: 'l', v: 10, w: 'y', t: 'zz' },
  { id: 'm', w: 'x', t: 'Zz' },
  { id: 'n', v: 0, w: null, t: 'zZa' },
  { id: 'o', v: 'Apple', w: 'x', t: '~' },
  { id: 'p', v: '10', w: 'z', t: '10' },
]
// The fixture server answers this array: changed in place for a re-sync.
const records: Record<string, unknown>[] = SOURCE.map((r) => ({ ...r }))

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld(records)
  for (const [name, sourceField, type] of [
    ['V', 'v', 'text'],
    ['W', 'w', 'text'],
    ['T', 't', 'text'],
    ['N', 'v', 'number'],
    ['Id', 'id', 'text'],
  ]) {
    const res = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name, sourceField, type })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  }
})
afterAll(() => w.server.close())

/** A request filter that every row passes: the row query answers instead of the members. */
const EVERY_ROW = [{ columnTitle: 'Id', operator: 'isNotEmpty' }]

const ALL_FUNCTIONS = [
  { columnTitle: 'N', function: 'count' },
  { columnTitle: 'N', function: 'sum' },
  { columnTitle: 'N', function: 'average' },
  { columnTitle: 'N', function: 'min' },
  { columnTitle: 'N', function: 'max' },
  { columnTitle: 'N', function: 'median' },
  { columnTitle: 'V', function: 'distinct' },
  { columnTitle: 'V', function: 'count' },
  { columnTitle: 'T', function: 'min' },
  { columnTitle: 'T', function: 'max' },
  { columnTitle: 'T', function: 'distinct', alias: 'names' },
]

async function summary(viewId: number, params: Record<string, unknown> = {}) {
  const res = await w.alice.get(`/api/views/${viewId}/rows${query({ limit: '5', ...params })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return {
    timing: res.headers.get('server-timing'),
    total: res.body.meta.total,
    groups: res.body.groups,
    aggregations: res.body.aggregations,
  }
}

/** The members' summary equals the row query's (each cached under its own statements: both computed). */
async function agreed(viewId: number) {
  const stored = await summary(viewId)
  const queried = await summary(viewId, { filters: EVERY_ROW })
  expect(stored.timing).toBe('rows;desc="members", summary;desc="members"')
  expect(queried.timing).toBe('rows;desc="query", summary;desc="query"')
  expect(stored.groups).toEqual(queried.groups)
  expect(stored.aggregations).toEqual(queried.aggregations)
  expect(stored.total).toBe(queried.total)
  return stored
}

async function view(body: Record<string, unknown>): Promise<number> {
  const res = await w.alice.post('/api/views', { panelId: w.panelId, name: 'S', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body.id
}

describe('a view summary from its stored members', () => {
  it.each([
    ['every function, no groups', { aggregations: ALL_FUNCTIONS.slice(0, 4) }],
    [
      'groups of a text column, letters in both cases and blanks',
      { config: { groupBy: ['W'] }, aggregations: ALL_FUNCTIONS.slice(0, 4) },
    ],
    [
      'groups of a mixed column (numbers, texts, arrays, blanks)',
      { config: { groupBy: ['V'] }, aggregations: ALL_FUNCTIONS.slice(6, 10) },
    ],
    ['groups of a number column', { config: { groupBy: ['N'] }, aggregations: [{ columnTitle: 'T', function: 'distinct' }] }],
    ['two group columns', { config: { groupBy: ['W', 'N'] }, aggregations: [{ columnTitle: 'N', function: 'median' }] }],
    [
      'a filtered view',
      {
        config: { groupBy: ['W'] },
        filters: [{ columnTitle: 'N', operator: 'isNotEmpty' }],
        aggregations: ALL_FUNCTIONS.slice(3, 7),
      },
    ],
    ['groups only', { config: { groupBy: ['T'] } }],
  ])('%s: the same summary as the row query', async (_label, body) => {
    const id = await view(body)
    const s = await agreed(id)
    expect(s.total).toBeGreaterThan(0)
  })

  it('follows a re-sync that changes grouped and aggregated values the view does not show', async () => {
    const id = await view({
      config: { groupBy: ['W'], columns: ['Id'] },
      aggregations: [
        { columnTitle: 'N', function: 'sum' },
        { columnTitle: 'T', function: 'distinct' },
      ],
    })
    const before = await agreed(id)
    records[0].w = 'y'
    records[1].v = 7
    records[2].t = 'ABC'
    records.push({ id: 'q', v: 100, w: 'new', t: 'q' })
    const sync = await w.alice.post(`/api/datasources/${w.sourceId}/sync`)
    expect(sync.status, JSON.stringify(sync.body)).toBeLessThan(300)
    const after = await agreed(id)
    expect(after.groups).not.toEqual(before.groups)
    expect(after.groups.some((g: { key: { W: unknown } }) => g.key.W === 'new')).toBe(true)
  })

  it('follows a change of work state in a view grouped by _status', async () => {
    const id = await view({ config: { groupBy: ['_status'] }, aggregations: [{ columnTitle: 'N', function: 'sum' }] })
    const before = await agreed(id)
    const res = await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.a}/work`, { status: 'in_progress' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const after = await agreed(id)
    expect(after.groups).not.toEqual(before.groups)
  })

  it('follows a change of its aggregations: the members are evaluated again', async () => {
    const id = await view({ config: { groupBy: ['W'] }, aggregations: [{ columnTitle: 'N', function: 'sum' }] })
    await agreed(id)
    const put = await w.alice.put(`/api/views/${id}`, { aggregations: [{ columnTitle: 'T', function: 'max' }] })
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    const s = await agreed(id)
    expect(Object.keys(s.aggregations)).toEqual(['max(T)'])
  })

  it('keeps the values of a summarised view only: other views store none', async () => {
    const plain = await view({ sorting: [{ columnTitle: 'T', direction: 'asc' }] })
    await summary(plain)
    const [row] = await w.t.deps.db.all<{ n: number }>(
      sql`SELECT count(*) AS n FROM view_members WHERE view_id = ${plain} AND (sm IS NOT NULL OR g0 IS NOT NULL OR a0 IS NOT NULL)`,
    )
    expect(Number(row.n)).toBe(0)
  })

  it('reads the summary of a view grouped by a column time changes (_overdue) from the records', async () => {
    const id = await view({ config: { groupBy: ['_overdue'] } })
    const s = await summary(id)
    expect(s.timing).toBe('rows;desc="members", summary;desc="query"')
  })
})
