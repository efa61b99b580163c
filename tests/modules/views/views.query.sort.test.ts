import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idsOf, query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Sorting and paging of view rows (DATA-ENGINE: Sorting; spec §2.10 APIResponse) over the
 * fixture patients (see views.query.filters.test.ts for the table).
 */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

async function viewWith(extra: Record<string, unknown>) {
  const res = await w.alice.post('/api/views', { name: 'Sorted', panelId: w.panelId, ...extra })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body.id as number
}

async function sortedIds(sorting: unknown[], params: Record<string, unknown> = {}) {
  const id = await viewWith({ sorting })
  const res = await w.alice.get(`/api/views/${id}/rows${query(params)}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return idsOf(w, res.body)
}

describe('sorting', () => {
  it.each([
    ['numbers ascending, blanks last', [{ columnTitle: 'Age', direction: 'asc' }], ['p5', 'p1', 'p3', 'p2', 'p6', 'p4']],
    ['numbers descending, blanks still last', [{ columnTitle: 'Age', direction: 'desc' }], ['p6', 'p2', 'p3', 'p1', 'p5', 'p4']],
    [
      'nullsFirst puts blanks first',
      [{ columnTitle: 'Age', direction: 'asc', nullsFirst: true }],
      ['p4', 'p5', 'p1', 'p3', 'p2', 'p6'],
    ],
    ['text case-insensitively', [{ columnTitle: 'Name', direction: 'asc' }], ['p1', 'p3', 'p6', 'p2', 'p4', 'p5']],
    ['dates as instants', [{ columnTitle: 'Birth', direction: 'desc' }], ['p5', 'p1', 'p3', 'p2', 'p6', 'p4']],
    ['date-times as instants', [{ columnTitle: 'Seen', direction: 'asc' }], ['p6', 'p3', 'p5', 'p1', 'p2', 'p4']],
    ['ties broken by row id', [{ columnTitle: 'City', direction: 'asc' }], ['p6', 'p1', 'p5', 'p2', 'p3', 'p4']],
    ['arrays by their first element', [{ columnTitle: 'Tags', direction: 'asc' }], ['p6', 'p2', 'p1', 'p5', 'p3', 'p4']],
    [
      'several keys by priority, booleans false before true',
      [
        { columnTitle: 'Name', direction: 'desc', priority: 2 },
        { columnTitle: 'Active', direction: 'asc', priority: 1 },
      ],
      ['p5', 'p2', 'p6', 'p3', 'p1', 'p4'],
    ],
    [
      'customOrder values first in their order, then the rest in the direction',
      [{ columnTitle: 'Name', direction: 'desc', customOrder: ['zoe', 'Bob'] }],
      ['p5', 'p6', 'p4', 'p2', 'p3', 'p1'],
    ],
    [
      'customOrder with blanks first',
      [{ columnTitle: 'City', direction: 'asc', customOrder: ['Paris', 'berlin'], nullsFirst: true }],
      ['p3', 'p4', 'p2', 'p6', 'p1', 'p5'],
    ],
  ])('%s', async (_label, sorting, expected) => {
    expect(await sortedIds(sorting)).toEqual(expected)
  })

  it('a long customOrder (bound as one list) orders the same way', async () => {
    const filler = Array.from({ length: 30 }, (_, i) => `filler-${i}`)
    expect(await sortedIds([{ columnTitle: 'Name', direction: 'desc', customOrder: [...filler, 'zoe', 'Bob'] }])).toEqual([
      'p5',
      'p6',
      'p4',
      'p2',
      'p3',
      'p1',
    ])
  })

  it("the request's sort comes before the view's keys", async () => {
    const sorting = [{ columnTitle: 'City', direction: 'asc' }]
    expect(await sortedIds(sorting, { sort: 'Age', order: 'desc' })).toEqual(['p6', 'p2', 'p3', 'p1', 'p5', 'p4'])
    expect(await sortedIds([], { sort: 'Name' })).toEqual(['p1', 'p3', 'p6', 'p2', 'p4', 'p5'])
  })

  it('a sort on an unknown column is a 400 naming it', async () => {
    const id = await viewWith({ sorting: [{ columnTitle: 'Ghost', direction: 'asc' }] })
    const res = await w.alice.get(`/api/views/${id}/rows`)
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual([{ path: 'view.sorting[0].columnTitle', message: 'unknown column "Ghost"' }])
    const bad = await w.alice.get(`/api/panels/${w.panelId}/rows?sort=Nope`)
    expect(bad.status).toBe(400)
    expect(bad.body.details).toEqual([{ path: 'sort', message: 'unknown column "Nope"' }])
  })
})

describe('paging', () => {
  const path = () => `/api/panels/${w.panelId}/rows`

  it('answers meta and links of a middle page', async () => {
    const res = await w.alice.get(`${path()}?sort=Age&page=2&limit=2`)
    expect(res.status).toBe(200)
    expect(idsOf(w, res.body)).toEqual(['p3', 'p2'])
    expect(res.body.meta).toEqual({ total: 6, page: 2, limit: 2, pages: 3, hasNext: true, hasPrev: true })
    expect(res.body.links).toEqual({
      first: `${path()}?sort=Age&page=1&limit=2`,
      prev: `${path()}?sort=Age&page=1&limit=2`,
      next: `${path()}?sort=Age&page=3&limit=2`,
      last: `${path()}?sort=Age&page=3&limit=2`,
    })
  })

  it('pages cover every row once, in order', async () => {
    const seen: string[] = []
    for (let page = 1; page <= 3; page++)
      seen.push(...idsOf(w, (await w.alice.get(`${path()}?sort=Age&page=${page}&limit=2`)).body))
    expect(seen).toEqual(['p5', 'p1', 'p3', 'p2', 'p6', 'p4'])
  })

  it('a page past the end is empty and points back', async () => {
    const res = await w.alice.get(`${path()}?page=9&limit=4`)
    expect(res.body.data).toEqual([])
    expect(res.body.meta).toEqual({ total: 6, page: 9, limit: 4, pages: 2, hasNext: false, hasPrev: true })
    expect(res.body.links.prev).toBe(`${path()}?page=2&limit=4`)
    expect(res.body.links.next).toBeNull()
  })

  it('defaults to page 1 of 50 and counts filtered rows', async () => {
    const res = await w.alice.get(`${path()}${query({ filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 40 }] })}`)
    expect(res.body.meta).toEqual({ total: 3, page: 1, limit: 50, pages: 1, hasNext: false, hasPrev: false })
  })

  it('refuses limits outside 1–100 and pages below 1', async () => {
    for (const q of ['limit=101', 'limit=0', 'page=0', 'page=x', 'order=up']) {
      const res = await w.alice.get(`${path()}?${q}`)
      expect(res.status, q).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
    }
  })
})
