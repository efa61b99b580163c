import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idsOf, query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * groupBy and aggregations of view rows (DATA-ENGINE: groupBy and aggregations), overall and per
 * group, over the fixture patients (see views.query.filters.test.ts for the table).
 */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

const AGGREGATIONS = [
  { columnTitle: 'Age', function: 'count' },
  { columnTitle: 'Age', function: 'sum' },
  { columnTitle: 'Age', function: 'average', alias: 'Mean age' },
  { columnTitle: 'Age', function: 'min' },
  { columnTitle: 'Age', function: 'max' },
  { columnTitle: 'Age', function: 'median' },
  { columnTitle: 'City', function: 'distinct' },
  { columnTitle: 'City', function: 'count' },
  { columnTitle: 'Name', function: 'min' },
  { columnTitle: 'Birth', function: 'max' },
  { columnTitle: 'Active', function: 'max', alias: 'Any active' },
]

async function viewRows(extra: Record<string, unknown>, params: Record<string, unknown> = {}) {
  const view = await w.alice.post('/api/views', { name: 'Grouped', panelId: w.panelId, ...extra })
  expect(view.status, JSON.stringify(view.body)).toBe(201)
  return w.alice.get(`/api/views/${view.body.id}/rows${query(params)}`)
}

describe('aggregations', () => {
  it('answers every function over the filtered rows, keyed by alias or function(column)', async () => {
    const res = await viewRows({ aggregations: AGGREGATIONS })
    expect(res.status).toBe(200)
    expect(res.body.aggregations).toEqual({
      'count(Age)': 5,
      'sum(Age)': 218,
      'Mean age': 43.6,
      'min(Age)': 29,
      'max(Age)': 67,
      'median(Age)': 41,
      'distinct(City)': 3,
      'count(City)': 4,
      'min(Name)': 'Ada',
      'max(Birth)': '1995-12-31',
      'Any active': true,
    })
    expect(res.body.groups).toBeUndefined()
  })

  it('takes the mean of the two middle values for an even count, and applies request filters first', async () => {
    const res = await viewRows(
      { aggregations: [{ columnTitle: 'Age', function: 'median' }] },
      { filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 30 }] },
    )
    expect(res.body.aggregations).toEqual({ 'median(Age)': 43 })
    expect(res.body.meta.total).toBe(4)
  })

  it('answers blanks for an empty selection: zero counts and sums, null for the rest', async () => {
    const res = await viewRows({
      aggregations: AGGREGATIONS,
      filters: [{ columnTitle: 'Age', operator: 'greaterThan', value: 1000 }],
    })
    expect(res.body.aggregations).toEqual({
      'count(Age)': 0,
      'sum(Age)': 0,
      'Mean age': null,
      'min(Age)': null,
      'max(Age)': null,
      'median(Age)': null,
      'distinct(City)': 0,
      'count(City)': 0,
      'min(Name)': null,
      'max(Birth)': null,
      'Any active': null,
    })
  })

  it('refuses numeric functions on other kinds and unknown columns, naming each entry', async () => {
    const res = await viewRows({
      aggregations: [
        { columnTitle: 'Name', function: 'sum' },
        { columnTitle: 'Ghost', function: 'count' },
        { columnTitle: 'Birth', function: 'median' },
      ],
    })
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual([
      { path: 'view.aggregations[0].function', message: 'sum needs a number column; "Name" holds text values' },
      { path: 'view.aggregations[1].columnTitle', message: 'unknown column "Ghost"' },
      { path: 'view.aggregations[2].function', message: 'median needs a number column; "Birth" holds date values' },
    ])
  })
})

describe('groupBy', () => {
  it('answers groups ordered by key (blanks last) with counts and per-group aggregations', async () => {
    const res = await viewRows({ config: { groupBy: ['Active'] }, aggregations: AGGREGATIONS })
    expect(res.status).toBe(200)
    expect(res.body.groups).toEqual([
      {
        key: { Active: false },
        count: 2,
        aggregations: {
          'count(Age)': 2,
          'sum(Age)': 74,
          'Mean age': 37,
          'min(Age)': 29,
          'max(Age)': 45,
          'median(Age)': 37,
          'distinct(City)': 2,
          'count(City)': 2,
          'min(Name)': 'grace',
          'max(Birth)': '1995-12-31',
          'Any active': false,
        },
      },
      {
        key: { Active: true },
        count: 3,
        aggregations: {
          'count(Age)': 3,
          'sum(Age)': 144,
          'Mean age': 48,
          'min(Age)': 36,
          'max(Age)': 67,
          'median(Age)': 41,
          'distinct(City)': 2,
          'count(City)': 2,
          'min(Name)': 'Ada',
          'max(Birth)': '1990-01-15',
          'Any active': true,
        },
      },
      {
        key: { Active: null },
        count: 1,
        aggregations: {
          'count(Age)': 0,
          'sum(Age)': 0,
          'Mean age': null,
          'min(Age)': null,
          'max(Age)': null,
          'median(Age)': null,
          'distinct(City)': 0,
          'count(City)': 0,
          'min(Name)': 'Linus',
          'max(Birth)': null,
          'Any active': null,
        },
      },
    ])
    expect(res.body.aggregations['sum(Age)']).toBe(218)
    // Rows come group by group, in the groups' order.
    expect(idsOf(w, res.body)).toEqual(['p2', 'p5', 'p1', 'p3', 'p6', 'p4'])
  })

  it('groups by several columns, texts case-insensitively', async () => {
    const res = await viewRows({
      config: { groupBy: ['Active', 'City'] },
      aggregations: [{ columnTitle: 'Age', function: 'median', alias: 'm' }],
    })
    expect(
      res.body.groups.map((g: { key: unknown; count: number; aggregations: { m: unknown } }) => [
        g.key,
        g.count,
        g.aggregations.m,
      ]),
    ).toEqual([
      [{ Active: false, City: 'London' }, 1, 29],
      [{ Active: false, City: 'paris' }, 1, 45],
      [{ Active: true, City: 'Berlin' }, 1, 67],
      [{ Active: true, City: 'London' }, 1, 36],
      // p3's city is "" (a value of its own, grouped apart from null, blank groups last)
      [{ Active: true, City: '' }, 1, 41],
      [{ Active: null, City: null }, 1, null],
    ])
  })

  it('groups list cells by their whole value and answers the key as a list', async () => {
    const res = await viewRows({ config: { groupBy: ['Tags'] }, aggregations: [{ columnTitle: 'Age', function: 'sum' }] })
    expect(res.body.groups).toEqual([
      { key: { Tags: ['cardio', 'diabetes'] }, count: 1, aggregations: { 'sum(Age)': 67 } },
      { key: { Tags: ['diabetes'] }, count: 1, aggregations: { 'sum(Age)': 45 } },
      { key: { Tags: ['vip', 'diabetes'] }, count: 1, aggregations: { 'sum(Age)': 36 } },
      { key: { Tags: ['VIP'] }, count: 1, aggregations: { 'sum(Age)': 29 } },
      // p3's tags are [] and p4 has none: two blank groups, [] before null
      { key: { Tags: [] }, count: 1, aggregations: { 'sum(Age)': 41 } },
      { key: { Tags: null }, count: 1, aggregations: { 'sum(Age)': 0 } },
    ])
  })

  it('merges texts differing only in case into one group (as filters compare them)', async () => {
    const col = await w.alice.post(`/api/panels/${w.panelId}/columns/calculated`, {
      name: 'CityCase',
      formula: 'IF({Age} > 35, UPPER({City}), {City})',
    })
    expect(col.status).toBe(201)
    const res = await viewRows({
      config: { groupBy: ['CityCase'] },
      filters: [{ columnTitle: 'City', operator: 'isNotEmpty' }],
      aggregations: [
        { columnTitle: 'CityCase', function: 'distinct' },
        { columnTitle: 'Age', function: 'median' },
      ],
    })
    expect(res.status).toBe(200)
    expect(res.body.groups).toEqual([
      { key: { CityCase: 'BERLIN' }, count: 1, aggregations: { 'distinct(CityCase)': 1, 'median(Age)': 67 } },
      { key: { CityCase: 'LONDON' }, count: 2, aggregations: { 'distinct(CityCase)': 1, 'median(Age)': 32.5 } },
      { key: { CityCase: 'PARIS' }, count: 1, aggregations: { 'distinct(CityCase)': 1, 'median(Age)': 45 } },
    ])
    expect(res.body.aggregations).toEqual({ 'distinct(CityCase)': 3, 'median(Age)': 40.5 })
  })

  it('an unknown groupBy column is a 400 naming it', async () => {
    const res = await viewRows({ config: { groupBy: ['Ward'] } })
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual([{ path: 'view.config.groupBy[0]', message: 'unknown column "Ward"' }])
  })
})
