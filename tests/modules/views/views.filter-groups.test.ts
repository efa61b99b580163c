import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idsOf, query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Nested filter groups and the web client's spellings (issue 10): a criterion with `conditions` and
 * no column is a group, groups nest (AND inside OR inside AND) wherever filters are accepted, a
 * group's logicalOperator defaults to AND, `and`/`or` are accepted in either case, and filters come
 * back spelled as they were sent. Rows: tests/modules/rows/fixtures.ts PATIENTS
 * (p1 Ada 36 London [vip,diabetes], p2 grace 45 paris, p3 Alan 41 "", p4 Linus, p5 Zoe 29 London [VIP], p6 Bob 67 Berlin).
 */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

/** (City = london OR Age > 60) AND ((Name starts with a AND Age < 40) OR Tags = vip) → p1, p5. */
const NESTED = [
  {
    logicalOperator: 'OR',
    conditions: [
      { columnTitle: 'City', operator: 'equals', value: 'london' },
      { columnTitle: 'Age', operator: 'gt', value: 60 },
    ],
  },
  {
    logicalOperator: 'or',
    conditions: [
      {
        conditions: [
          { columnTitle: 'Name', operator: 'startsWith', value: 'a' },
          { columnTitle: 'Age', operator: 'lessThan', value: 40 },
        ],
      },
      { columnTitle: 'Tags', operator: 'equals', value: 'vip' },
    ],
  },
]

const sortedIds = (body: { data: { _id: number }[] }) => idsOf(w, body).sort()

describe('nested filter groups', () => {
  it('POST /api/views stores them as sent and its rows apply them', async () => {
    const res = await w.alice.post('/api/views', { name: 'Nested', panelId: w.panelId, filters: NESTED })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.filters).toEqual(NESTED)
    const rows = await w.alice.get(`/api/views/${res.body.id}/rows`)
    expect(rows.status).toBe(200)
    expect(sortedIds(rows.body)).toEqual(['p1', 'p5'])
  })

  it('the filters query parameter of the rows endpoint takes them too', async () => {
    const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: NESTED })}`)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(sortedIds(res.body)).toEqual(['p1', 'p5'])
  })

  it('a group without logicalOperator is AND; an empty group constrains nothing', async () => {
    const and = [
      {
        conditions: [
          { columnTitle: 'City', operator: 'equals', value: 'London' },
          { columnTitle: 'Age', operator: 'greaterThan', value: 30 },
        ],
      },
    ]
    const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: and })}`)
    expect(sortedIds(res.body)).toEqual(['p1'])
    const empty = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: [{ conditions: [] }] })}`)
    expect(empty.status).toBe(200)
    expect(empty.body.meta.total).toBe(6)
  })

  it('a condition without a column or operator is a 400 naming it, at any depth', async () => {
    const res = await w.alice.post('/api/views', {
      name: 'Bad',
      panelId: w.panelId,
      filters: [{ logicalOperator: 'OR', conditions: [{ operator: 'equals', value: 1 }, { columnTitle: 'Age' }] }],
    })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'filters.0.conditions.0.columnTitle',
      'filters.0.conditions.1.operator',
    ])
    const rows = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: [{ value: 3 }] })}`)
    expect(rows.status).toBe(400)
    expect(rows.body.code).toBe('VALIDATION_ERROR')
  })

  it('an unknown column inside a group is a 400 naming the nested criterion', async () => {
    const filters = [{ logicalOperator: 'and', conditions: [{ columnTitle: 'Nope', operator: 'isNull' }] }]
    const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters })}`)
    expect(res.status).toBe(400)
    expect(JSON.stringify(res.body.details)).toContain('filters[0].conditions[0].columnTitle')
  })
})

describe('the web client unchanged: PUT /api/views/{id}/filters and sorts', () => {
  it('accepts lowercase and/or and answers every filter as it was sent', async () => {
    const view = await w.alice.post('/api/views', { name: 'Client', panelId: w.panelId })
    const filters = [
      { columnName: 'Age', operator: 'gte', value: 40, logicalOperator: 'and' },
      { columnName: 'City', operator: 'isNotEmpty', logicalOperator: 'and' },
      {
        logicalOperator: 'or',
        conditions: [
          { columnTitle: 'Name', operator: 'eq', value: 'grace' },
          { columnTitle: 'Name', operator: 'equals', value: 'bob', logicalOperator: 'and' },
        ],
      },
    ]
    const res = await w.alice.put(`/api/views/${view.body.id}/filters`, { filters })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const records = [
      { id: 1, columnName: 'Age', operator: 'gte', value: 40, logicalOperator: 'and' },
      { id: 2, columnName: 'City', operator: 'isNotEmpty', value: null, logicalOperator: 'and' },
      { id: 3, value: null, logicalOperator: 'or', conditions: filters[2].conditions },
    ]
    expect(res.body).toEqual({ filters: records })
    expect((await w.alice.get(`/api/views/${view.body.id}/filters`)).body).toEqual({ filters: records })
    const rows = await w.alice.get(`/api/views/${view.body.id}/rows`)
    expect(sortedIds(rows.body)).toEqual(['p2', 'p6'])
  })

  it('accepts AND/OR in either case in a view body and a cohort rule', async () => {
    const view = await w.alice.post('/api/views', {
      name: 'Lower',
      panelId: w.panelId,
      filters: [
        {
          logicalOperator: 'or',
          conditions: [
            { columnTitle: 'Age', operator: 'lt', value: 30 },
            { columnTitle: 'Age', operator: 'gt', value: 60 },
          ],
        },
      ],
    })
    expect(view.status).toBe(201)
    expect(sortedIds((await w.alice.get(`/api/views/${view.body.id}/rows`)).body)).toEqual(['p5', 'p6'])
    const panel = await w.alice.put(`/api/panels/${w.panelId}`, {
      cohortRule: {
        logic: 'or',
        conditions: [
          { field: 'Name', operator: 'eq', value: 'Ada' },
          { field: 'Name', operator: 'eq', value: 'Zoe' },
        ],
      },
    })
    expect(panel.status, JSON.stringify(panel.body)).toBe(200)
    expect(panel.body.cohortRule.logic).toBe('or')
    const rows = await w.alice.get(`/api/panels/${w.panelId}/rows`)
    expect(sortedIds(rows.body)).toEqual(['p1', 'p5'])
    await w.alice.put(`/api/panels/${w.panelId}`, { cohortRule: { logic: 'AND', conditions: [] } })
  })

  it('sort records carry integer ids, and the records read can be sent back as they are', async () => {
    const view = await w.alice.post('/api/views', {
      name: 'Sorted',
      panelId: w.panelId,
      sorting: [
        { columnTitle: 'Age', direction: 'desc', priority: 2 },
        { columnTitle: 'Name', direction: 'asc', priority: 1 },
      ],
    })
    const res = await w.alice.get(`/api/views/${view.body.id}/sorts`)
    expect(res.body).toEqual({
      sorts: [
        { id: 1, columnName: 'Name', direction: 'asc', order: 1 },
        { id: 2, columnName: 'Age', direction: 'desc', order: 2 },
      ],
    })
    const put = await w.alice.put(`/api/views/${view.body.id}/sorts`, res.body)
    expect(put.status).toBe(200)
    expect(put.body).toEqual(res.body)
  })
})
