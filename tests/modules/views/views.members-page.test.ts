import { sql } from 'drizzle-orm'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { exportBatching } from '../../../src/modules/rows/rows.export.ts'
import { memberRowsSql } from '../../../src/rowstore/member-page.ts'
import { membersAfter } from '../../../src/rowstore/query/member-order.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * A view's page from its stored members (docs/views-and-rows.md "Access paths"): the same rows in
 * the same order as the row query over the panel, whatever the sort, over values of every type —
 * numbers, text read as numbers, letters in both cases, blanks of each kind, texts that begin
 * others, non-ASCII text — and an export (a keyset walk of the members, in small batches here)
 * streams that order. `Server-Timing` says which path answered.
 */

const MIXED = [
  { id: 'a', v: 10, w: 'x', t: 'abc' },
  { id: 'b', v: 'ten', w: 'y', t: 'ABC' },
  { id: 'c', v: '', w: 'x', t: 'ab' },
  { id: 'd', v: null, w: 'y', t: 'abcd' },
  { id: 'e', v: [], w: 'x', t: 'Abd' },
  { id: 'f', v: -3.5, w: 'z', t: 'é' },
  { id: 'g', v: 'Ten', w: 'z', t: 'e' },
  { id: 'h', v: 'tEN', w: 'x', t: '' },
  { id: 'i', v: 2, w: 'y', t: 'b' },
  { id: 'j', v: [7, 1], w: 'x', t: 'B' },
  { id: 'k', v: 'apple', w: 'z', t: 'a' },
  { id: 'l', v: 10, w: 'y', t: 'zz' },
  { id: 'm', w: 'x', t: 'Zz' },
  { id: 'n', v: 0, w: 'y', t: 'zZa' },
  { id: 'o', v: 'Apple', w: 'x', t: '~' },
  { id: 'p', v: '10', w: 'z', t: '10' },
]

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld(MIXED)
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
beforeEach(() => {
  exportBatching.rows = 3
})
afterEach(() => {
  exportBatching.rows = 2000
})

/** Every row of the view, page by page, and the path of each page. */
async function readAll(viewId: number, params: Record<string, unknown> = {}) {
  const keys: string[] = []
  const rows: Record<string, unknown>[] = []
  const paths = new Set<string>()
  let total = 0
  for (let page = 1; page <= 10; page++) {
    const res = await w.alice.get(`/api/views/${viewId}/rows${query({ ...params, page: String(page), limit: '5' })}`)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    // The rows' path (a grouped view's header also names its summary's).
    paths.add(String(res.headers.get('server-timing')).split(', ')[0])
    total = res.body.meta.total
    keys.push(...res.body.data.map((r: { _key: string }) => r._key))
    rows.push(...res.body.data)
    if (!res.body.meta.hasNext) break
  }
  return { keys, rows, paths: [...paths], total }
}

/** A request filter that every row passes: the row query answers instead of the members. */
const EVERY_ROW = [{ columnTitle: 'W', operator: 'isNotEmpty' }]

/** The rows of a JSON export of the view, in the order it streams (batches of 3: see beforeEach). */
async function exportedRows(viewId: number): Promise<Record<string, unknown>[]> {
  const res = await w.t.app.request(`/api/views/${viewId}/export?format=json`, {
    headers: await authHeaders('tenant-a', 'alice'),
  })
  expect(res.status).toBe(200)
  return (await res.json()) as Record<string, unknown>[]
}

/** Each row with only the named fields. */
const project = (rows: Record<string, unknown>[], names: string[]) =>
  rows.map((r) => Object.fromEntries(names.map((n) => [n, r[n]])))

/** The members' pages equal the row query's pages, and an export streams the same order. */
async function compare(extra: Record<string, unknown>) {
  const res = await w.alice.post('/api/views', { name: 'Mixed', panelId: w.panelId, ...extra })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  const stored = await readAll(res.body.id)
  const queried = await readAll(res.body.id, { filters: EVERY_ROW })
  expect(stored.paths).toEqual(['rows;desc="members"'])
  expect(queried.paths).toEqual(['rows;desc="query"'])
  expect(stored.keys).toEqual(queried.keys)
  expect(stored.total).toBe(queried.total)
  expect(stored.rows).toEqual(queried.rows)
  // The export (rows as the members store them, or their records) equals the row query's rows, cell for cell.
  const rows = await exportedRows(res.body.id)
  expect(rows.map((r) => r.Id)).toEqual(stored.keys)
  expect(rows).toEqual(project(queried.rows, Object.keys(rows[0] ?? {})))
  return stored.keys
}

describe('a view page from its stored members', () => {
  it.each([
    ['no sorting (row id order)', {}],
    ['mixed types ascending', { sorting: [{ columnTitle: 'V', direction: 'asc' }] }],
    ['mixed types descending', { sorting: [{ columnTitle: 'V', direction: 'desc' }] }],
    ['mixed types descending, blanks first', { sorting: [{ columnTitle: 'V', direction: 'desc', nullsFirst: true }] }],
    ['a number column descending', { sorting: [{ columnTitle: 'N', direction: 'desc' }] }],
    ['text prefixes and case descending', { sorting: [{ columnTitle: 'T', direction: 'desc' }] }],
    ['text prefixes and case ascending', { sorting: [{ columnTitle: 'T', direction: 'asc' }] }],
    [
      'a custom order descending, blanks first',
      { sorting: [{ columnTitle: 'V', direction: 'desc', customOrder: ['apple', '10'], nullsFirst: true }] },
    ],
    [
      'two keys in mixed directions',
      {
        sorting: [
          { columnTitle: 'W', direction: 'desc', priority: 1 },
          { columnTitle: 'T', direction: 'asc', priority: 2 },
        ],
      },
    ],
    ['groups first, then the sorting', { config: { groupBy: ['W'] }, sorting: [{ columnTitle: 'V', direction: 'desc' }] }],
    [
      'filtered',
      { filters: [{ columnTitle: 'W', operator: 'equals', value: 'x' }], sorting: [{ columnTitle: 'T', direction: 'desc' }] },
    ],
    [
      'some columns, reordered (an export reads the stored rows)',
      { config: { columns: ['T', 'Id', 'N'] }, sorting: [{ columnTitle: 'N', direction: 'asc' }] },
    ],
    [
      'a work column shown (an export reads the records: work columns are computed when read)',
      { config: { columns: ['Id', '_status', 'N', '_overdue'] }, sorting: [{ columnTitle: 'T', direction: 'desc' }] },
    ],
  ])('%s: the same rows in the same order as the row query', async (_label, extra) => {
    const keys = await compare(extra)
    expect(keys.length).toBeGreaterThan(0)
  })

  it('descending text: bigger first, a text after the longer texts it begins, case ignored', async () => {
    const keys = await compare({ sorting: [{ columnTitle: 'T', direction: 'desc' }] })
    expect(keys.indexOf('d')).toBeLessThan(keys.indexOf('a')) // abcd before abc
    expect(keys.indexOf('a')).toBeLessThan(keys.indexOf('c')) // abc before ab
    expect(Math.abs(keys.indexOf('a') - keys.indexOf('b'))).toBe(1) // abc and ABC tie (row id)
    expect(keys.indexOf('a')).toBeLessThan(keys.indexOf('b'))
  })

  it('numbers descending, ties by row id, then every kind of blank', async () => {
    const keys = await compare({ sorting: [{ columnTitle: 'N', direction: 'desc' }] })
    // 10, 10, "10" (a number column reads it as 10), [7, 1] (its first element), 2, 0, -3.5; then the
    // blanks: "", null, [], a missing value, and the texts a number column cannot read.
    expect(keys.slice(0, 7)).toEqual(['a', 'l', 'p', 'j', 'i', 'n', 'f'])
    expect(keys.slice(7)).toEqual(['b', 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'o'])
  })

  it('a view whose sorting changes is evaluated again: its members answer in the new order', async () => {
    const res = await w.alice.post('/api/views', {
      name: 'Resorted',
      panelId: w.panelId,
      sorting: [{ columnTitle: 'T', direction: 'asc' }],
    })
    const before = await readAll(res.body.id)
    const put = await w.alice.put(`/api/views/${res.body.id}/sorts`, {
      sorts: [{ columnName: 'T', direction: 'desc', order: 1 }],
    })
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    const after = await readAll(res.body.id)
    expect(after.paths).toEqual(['rows;desc="members"'])
    expect(after.keys).toEqual((await readAll(res.body.id, { filters: EVERY_ROW })).keys)
    expect(after.keys).not.toEqual(before.keys)
  })

  it('a view whose order needs more keys than a member holds: the row query answers', async () => {
    const sorting = ['W', 'T', 'V', 'N', 'Id'].map((columnTitle, i) => ({ columnTitle, direction: 'desc', priority: i + 1 }))
    const res = await w.alice.post('/api/views', { name: 'Wide', panelId: w.panelId, sorting })
    const read = await readAll(res.body.id)
    expect(read.paths).toEqual(['rows;desc="query"'])
    expect(read.keys).toHaveLength(MIXED.length)
  })

  it('pages past the end are empty and the total comes from the stored count', async () => {
    const res = await w.alice.post('/api/views', { name: 'Count', panelId: w.panelId })
    const page = await w.alice.get(`/api/views/${res.body.id}/rows?page=9&limit=5`)
    expect(page.status).toBe(200)
    expect(page.body.data).toEqual([])
    expect(page.body.meta.total).toBe(MIXED.length)
    expect(page.headers.get('server-timing')).toBe('rows;desc="members"')
  })
})

describe('the plan of a page from the members', () => {
  it('walks the shared order index of the view (no sort of the members), then reads the page records by key', async () => {
    const res = await w.alice.post('/api/views', {
      name: 'Planned',
      panelId: w.panelId,
      sorting: [{ columnTitle: 'T', direction: 'desc' }],
    })
    const page = memberRowsSql('tenant-a', res.body.id, sql`TRUE`, 50, 100)
    const plan = await w.t.deps.db.all<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${page}`)
    const details = plan.map((p) => p.detail).join('\n')
    expect(details).toMatch(/view_members_order_idx/)
    // The only sort is the last step's, of the page's 50 rows by their place in the walk.
    const sorts = plan.map((p) => p.detail).filter((d) => d.includes('TEMP B-TREE'))
    expect(sorts).toEqual(['USE TEMP B-TREE FOR ORDER BY'])
    expect(plan.at(-1)?.detail).toBe('USE TEMP B-TREE FOR ORDER BY')
    expect(details).toMatch(/records_source_generation_key_idx/)
    const after = memberRowsSql('tenant-a', res.body.id, membersAfter([2, 'x', 0, 0, 0, 0, 0, 0, 1]), 50)
    const seek = (await w.t.deps.db.all<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${after}`)).map((p) => p.detail).join('\n')
    expect(seek).toMatch(
      /SEARCH m USING (COVERING )?INDEX view_members_order_idx \(view_id=\? AND \(s0,s1,s2,s3,s4,s5,s6,s7,row_id\)>\(\?,\?,\?,\?,\?,\?,\?,\?,\?\)\)/,
    )
  })
})

describe('reading a plan', () => {
  // On a runtime target the test process reads the server's database file on a connection of its
  // own; a plan read there must not leave it on the database of that moment (tests/helpers/remote/deno.ts).
  it('leaves what the test reads afterwards current with what the server writes', async () => {
    const views = async () =>
      (await w.t.deps.db.all<{ name: string }>(sql`SELECT name FROM views ORDER BY id`)).map((v) => v.name)
    const page = memberRowsSql('tenant-a', 1, sql`TRUE`, 50)
    for (const name of ['First', 'Second']) {
      await w.t.deps.db.all(sql`EXPLAIN QUERY PLAN ${page}`)
      await w.t.client.execute({ sql: 'EXPLAIN SELECT count(*) FROM records', args: [] })
      expect((await w.alice.post('/api/views', { name, panelId: w.panelId })).status).toBe(201)
      expect(await views()).toContain(name)
    }
  })
})
