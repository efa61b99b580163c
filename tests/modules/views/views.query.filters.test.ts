import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idsOf, query, type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Every filter operator on every kind of column (DATA-ENGINE: Views over rows), through
 * GET /api/panels/{id}/rows?filters=… over rows materialised from a loopback API source:
 * p1 Ada 36 1990-01-15 2024-03-01T10:00Z true  [vip,diabetes]   London [111,222]
 * p2 grace 45 1981-06-30 2024-03-02T23:30Z false [diabetes]     paris  333
 * p3 Alan 41 1983-02-01 2024-02-28T08:00Z true  (none)          (blank) (none)
 * p4 Linus (every other field blank)
 * p5 Zoe 29 1995-12-31 2024-03-01T00:00Z false [VIP]           London (none)
 * p6 Bob 67 1957-04-04 2023-12-31T23:59:59Z true [cardio,diabetes] Berlin 444
 */

let w: RowsWorld
const ALL = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6']

beforeAll(async () => {
  w = await rowsWorld()
  // SPLIT gives [] for a blank city (an empty list, not null); the IF gives "" (not null) for Bob.
  expect(
    (await w.alice.post(`/api/panels/${w.panelId}/columns/calculated`, { name: 'CityList', formula: 'SPLIT({City}, ",")' }))
      .status,
  ).toBe(201)
  const blanky = await w.alice.post(`/api/panels/${w.panelId}/columns/calculated`, {
    name: 'Blanky',
    formula: 'IF({Age} > 60, "", "x")',
  })
  expect(blanky.status).toBe(201)
})
afterAll(() => w.server.close())

async function filtered(criteria: unknown[]) {
  const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: criteria })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return idsOf(w, res.body).sort()
}

const TWIN: Record<string, string> = {
  equals: 'notEquals',
  contains: 'notContains',
  in: 'notIn',
  between: 'notBetween',
  isNull: 'isNotNull',
  isEmpty: 'isNotEmpty',
}

type Case = [column: string, operator: string, value: unknown, expected: string[]]

/** Runs a positive case and, when it has a negative twin, checks the twin selects exactly the rest. */
function cases(kind: string, list: Case[]) {
  describe(kind, () => {
    it.each(list)('%s %s %j', async (column, operator, value, expected) => {
      expect(await filtered([{ columnTitle: column, operator, value }])).toEqual(expected)
      const twin = TWIN[operator]
      if (twin) {
        const rest = ALL.filter((id) => !expected.includes(id))
        expect(await filtered([{ columnTitle: column, operator: twin, value }])).toEqual(rest)
      }
    })
  })
}

cases('text', [
  ['Name', 'equals', 'GRACE', ['p2']],
  ['Name', 'contains', 'A', ['p1', 'p2', 'p3']],
  ['Name', 'startsWith', 'a', ['p1', 'p3']],
  ['Name', 'endsWith', 'E', ['p2', 'p5']],
  ['Name', 'greaterThan', 'b', ['p2', 'p4', 'p5', 'p6']],
  ['Name', 'lessThan', 'B', ['p1', 'p3']],
  ['Name', 'greaterThanOrEqual', 'BOB', ['p2', 'p4', 'p5', 'p6']],
  ['Name', 'lessThanOrEqual', 'alan', ['p1', 'p3']],
  ['Name', 'between', ['b', 'h'], ['p2', 'p6']],
  ['Name', 'in', ['ada', 'ZOE'], ['p1', 'p5']],
  ['Name', 'contains', '%', []],
  ['City', 'isNull', null, ['p4']], // p3's city is "" (a value), p4 has none
  ['City', 'isEmpty', null, ['p3', 'p4']],
  ['City', 'equals', 'london', ['p1', 'p5']],
  ['Blanky', 'isNull', null, []],
  ['Blanky', 'isEmpty', null, ['p6']],
])

cases('text holding several values (FHIR repetitions)', [
  ['Phones', 'equals', '222', ['p1']],
  ['Phones', 'contains', '2', ['p1']],
  ['Phones', 'in', ['111', '444'], ['p1', 'p6']],
  ['Phones', 'isNull', null, ['p3', 'p4', 'p5']],
  ['Phones', 'greaterThan', '300', ['p2', 'p6']],
])

cases('list (multi_select)', [
  ['Tags', 'equals', 'vip', ['p1', 'p5']],
  ['Tags', 'contains', 'BET', ['p1', 'p2', 'p6']],
  ['Tags', 'startsWith', 'car', ['p6']],
  ['Tags', 'endsWith', 'ip', ['p1', 'p5']],
  ['Tags', 'greaterThan', 'd', ['p1', 'p2', 'p5', 'p6']],
  ['Tags', 'lessThan', 'd', ['p6']],
  ['Tags', 'greaterThanOrEqual', 'vip', ['p1', 'p5']],
  ['Tags', 'lessThanOrEqual', 'cardio', ['p6']],
  ['Tags', 'between', ['c', 'd'], ['p6']],
  ['Tags', 'in', ['cardio', 'VIP'], ['p1', 'p5', 'p6']],
  ['Tags', 'isNull', null, ['p4']], // p3's tags are [] (a value), p4 has none
  ['Tags', 'isEmpty', null, ['p3', 'p4']],
  ['CityList', 'isNull', null, []],
  ['CityList', 'isEmpty', null, ['p3', 'p4']],
  ['CityList', 'equals', 'LONDON', ['p1', 'p5']],
])

cases('number', [
  ['Age', 'equals', 41, ['p3']],
  ['Age', 'equals', '41', ['p3']],
  ['Age', 'greaterThan', 40, ['p2', 'p3', 'p6']],
  ['Age', 'lessThan', 40, ['p1', 'p5']],
  ['Age', 'greaterThanOrEqual', 41, ['p2', 'p3', 'p6']],
  ['Age', 'lessThanOrEqual', 36, ['p1', 'p5']],
  ['Age', 'between', [36, 45], ['p1', 'p2', 'p3']],
  ['Age', 'in', [29, 67], ['p5', 'p6']],
  ['Age', 'isNull', null, ['p4']],
  ['Age', 'isEmpty', null, ['p4']],
  ['Age', 'greaterThan', 9.5, ['p1', 'p2', 'p3', 'p5', 'p6']],
  ['Double', 'greaterThan', 100, ['p6']],
  ['Double', 'lessThan', 1, ['p4']],
])

cases('date', [
  ['Birth', 'equals', '1983-02-01', ['p3']],
  ['Birth', 'equals', '1990-01', ['p1']],
  ['Birth', 'greaterThan', '1985-01-01', ['p1', 'p5']],
  ['Birth', 'lessThan', '1982', ['p2', 'p6']],
  ['Birth', 'greaterThanOrEqual', '1990-01-15', ['p1', 'p5']],
  ['Birth', 'lessThanOrEqual', '1981-06-30', ['p2', 'p6']],
  ['Birth', 'between', ['1980', '1989'], ['p2', 'p3']],
  ['Birth', 'in', ['1957-04-04', '1995-12-31'], ['p5', 'p6']],
  ['Birth', 'contains', '-06-', ['p2']],
  ['Birth', 'startsWith', '199', ['p1', 'p5']],
  ['Birth', 'endsWith', '-31', ['p5']],
  ['Birth', 'isNull', null, ['p4']],
  ['Birth', 'isEmpty', null, ['p4']],
  ['Birth', 'equals', '1983-02-01T15:00:00Z', ['p3']],
])

cases('datetime', [
  ['Seen', 'equals', '2024-03-01', ['p1', 'p5']],
  ['Seen', 'equals', '2024-03-01T11:00:00+01:00', ['p1']],
  ['Seen', 'greaterThan', '2024-03-01T05:00:00Z', ['p1', 'p2']],
  ['Seen', 'greaterThanOrEqual', '2024-03-01', ['p1', 'p2', 'p5']],
  ['Seen', 'lessThan', '2024-01-01T01:00:00+01:00', ['p6']],
  ['Seen', 'lessThanOrEqual', '2024-02-28T08:00:00Z', ['p3', 'p6']],
  ['Seen', 'between', ['2024-02-28', '2024-03-01'], ['p1', 'p3', 'p5']],
  ['Seen', 'in', ['2024-03-02', '2023-12-31T23:59:59Z'], ['p2', 'p6']],
  ['Seen', 'isNull', null, ['p4']],
])

cases('boolean', [
  ['Active', 'equals', true, ['p1', 'p3', 'p6']],
  ['Active', 'equals', 'false', ['p2', 'p5']],
  ['Active', 'in', [true], ['p1', 'p3', 'p6']],
  ['Active', 'isNull', null, ['p4']],
  ['Active', 'isEmpty', null, ['p4']],
])

describe('aliases and groups', () => {
  it('accepts eq, ne, gt, lt, gte, lte as their canonical operators', async () => {
    expect(await filtered([{ columnTitle: 'Age', operator: 'gt', value: 40 }])).toEqual(['p2', 'p3', 'p6'])
    expect(await filtered([{ columnTitle: 'Age', operator: 'lte', value: 36 }])).toEqual(['p1', 'p5'])
    expect(await filtered([{ columnTitle: 'Name', operator: 'ne', value: 'ada' }])).toEqual(['p2', 'p3', 'p4', 'p5', 'p6'])
  })

  it('ANDs the top-level list and combines nested groups with their logicalOperator', async () => {
    const londonOrOld = {
      columnTitle: 'Age',
      operator: 'equals',
      logicalOperator: 'OR',
      conditions: [
        { columnTitle: 'City', operator: 'equals', value: 'London' },
        { columnTitle: 'Age', operator: 'greaterThan', value: 60 },
      ],
    }
    expect(await filtered([londonOrOld])).toEqual(['p1', 'p5', 'p6'])
    expect(await filtered([londonOrOld, { columnTitle: 'Active', operator: 'equals', value: true }])).toEqual(['p1', 'p6'])
    const nested = {
      columnTitle: 'x',
      operator: 'equals',
      logicalOperator: 'OR',
      conditions: [
        { columnTitle: 'Name', operator: 'equals', value: 'Linus' },
        {
          columnTitle: 'x',
          operator: 'equals',
          conditions: [
            { columnTitle: 'Tags', operator: 'equals', value: 'diabetes' },
            { columnTitle: 'Age', operator: 'lessThan', value: 50 },
          ],
        },
      ],
    }
    expect(await filtered([nested])).toEqual(['p1', 'p2', 'p4'])
  })
})

describe('type errors', () => {
  it.each([
    [
      [{ columnTitle: 'Age', operator: 'contains', value: '4' }],
      'filters[0].operator',
      'contains cannot apply to number column "Age"',
    ],
    [
      [{ columnTitle: 'Active', operator: 'greaterThan', value: true }],
      'filters[0].operator',
      'greaterThan cannot apply to boolean',
    ],
    [[{ columnTitle: 'Nope', operator: 'equals', value: 1 }], 'filters[0].columnTitle', 'unknown column "Nope"'],
    [[{ columnTitle: 'Age', operator: 'equals', value: 'old' }], 'filters[0].value', '"old" is not a number'],
    [[{ columnTitle: 'Birth', operator: 'greaterThan', value: 'soon' }], 'filters[0].value', 'is not a date'],
    [[{ columnTitle: 'Active', operator: 'equals', value: 'maybe' }], 'filters[0].value', 'is not a boolean'],
    [[{ columnTitle: 'Age', operator: 'equals' }], 'filters[0].value', 'a value is required'],
    [
      [{ columnTitle: 'g', operator: 'equals', conditions: [{ columnTitle: 'Age', operator: 'endsWith', value: '1' }] }],
      'filters[0].conditions[0].operator',
      'endsWith cannot apply',
    ],
  ])('%j → 400 at %s', async (criteria, path, message) => {
    const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: criteria })}`)
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: 'Validation Error', code: 'VALIDATION_ERROR' })
    const detail = res.body.details.find((d: { path: string }) => d.path === path)
    expect(detail?.message).toContain(message)
  })

  it('refuses a between without a pair and an in without a list (schema, before the columns)', async () => {
    for (const f of [
      { columnTitle: 'Age', operator: 'between', value: [1] },
      { columnTitle: 'Age', operator: 'in', value: 3 },
    ]) {
      const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: [f] })}`)
      expect(res.status).toBe(400)
      expect(JSON.stringify(res.body.details)).toContain('value')
    }
  })

  it('refuses filters that are not JSON or not a list of criteria', async () => {
    expect((await w.alice.get(`/api/panels/${w.panelId}/rows?filters=%5Bnope`)).status).toBe(400)
    expect((await w.alice.get(`/api/panels/${w.panelId}/rows${query({ filters: { a: 1 } })}`)).status).toBe(400)
    const bad = await w.alice.get(
      `/api/panels/${w.panelId}/rows${query({ filters: [{ columnTitle: 'Age', operator: 'near', value: 1 }] })}`,
    )
    expect(bad.status).toBe(400)
  })
})
