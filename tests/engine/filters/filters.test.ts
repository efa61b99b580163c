import { describe, expect, it } from 'vitest'
import { aggregateApplies, operatorApplies, operatorsFor } from '../../../src/engine/filters/kinds.ts'
import { FILTER_OPERATORS } from '../../../src/engine/filters/operators.ts'
import { type ColumnRef, type FilterIssue, resolveCohortRule, resolveFilters } from '../../../src/engine/filters/resolve.ts'
import { comparand, listOf, rangeOf } from '../../../src/engine/filters/values.ts'

const COLUMNS: ColumnRef[] = [
  { id: 1, name: 'Name', kind: 'text' },
  { id: 2, name: 'Age', kind: 'number' },
  { id: 3, name: 'Active', kind: 'boolean' },
  { id: 4, name: 'Birth', kind: 'date' },
  { id: 5, name: 'Seen', kind: 'datetime' },
  { id: 6, name: 'Tags', kind: 'list' },
]
const lookup = (name: string) => COLUMNS.find((c) => c.name === name)

describe('operatorApplies', () => {
  it('lets text, list, json and date columns take all 18 operators', () => {
    for (const kind of ['text', 'list', 'json', 'date', 'datetime'] as const) expect(operatorsFor(kind)).toHaveLength(18)
    expect(FILTER_OPERATORS).toHaveLength(18)
  })

  it('refuses substring operators on numbers and ordering operators on booleans', () => {
    for (const op of ['contains', 'notContains', 'startsWith', 'endsWith'] as const)
      expect(operatorApplies(op, 'number')).toBe(false)
    expect(operatorsFor('number')).toHaveLength(14)
    expect(operatorsFor('boolean')).toEqual([
      'equals',
      'notEquals',
      'in',
      'notIn',
      'isNull',
      'isNotNull',
      'isEmpty',
      'isNotEmpty',
    ])
  })

  it('keeps sum, average and median for numbers', () => {
    expect(aggregateApplies('sum', 'number')).toBe(true)
    expect(aggregateApplies('median', 'date')).toBe(false)
    expect(aggregateApplies('average', 'text')).toBe(false)
    expect(aggregateApplies('max', 'date')).toBe(true)
    expect(aggregateApplies('distinct', 'list')).toBe(true)
  })
})

describe('comparand', () => {
  it('reads values as the column kind', () => {
    expect(comparand('41', 'number', 'equals')).toEqual({ ok: true, value: { value: 41 } })
    expect(comparand(' 2.5 ', 'number', 'greaterThan')).toEqual({ ok: true, value: { value: 2.5 } })
    expect(comparand('TRUE', 'boolean', 'equals')).toEqual({ ok: true, value: { value: 1 } })
    expect(comparand(false, 'boolean', 'equals')).toEqual({ ok: true, value: { value: 0 } })
    expect(comparand(42, 'text', 'equals')).toEqual({ ok: true, value: { value: '42' } })
    expect(comparand(4, 'number', 'contains')).toEqual({ ok: true, value: { value: '4' } })
  })

  it('keeps date-only values at their precision and turns date-times into UTC instants', () => {
    expect(comparand('2024-03', 'datetime', 'equals')).toEqual({ ok: true, value: { value: '2024-03', day: true } })
    expect(comparand('2024-03-01T01:00:00+02:00', 'datetime', 'equals')).toEqual({
      ok: true,
      value: { value: '2024-02-29T23:00:00.000Z' },
    })
    expect(comparand('2024-03-01T01:00:00+02:00', 'date', 'equals')).toEqual({
      ok: true,
      value: { value: '2024-02-29', day: true },
    })
    expect(comparand('2024-03-01 10:00', 'datetime', 'lessThan')).toEqual({
      ok: true,
      value: { value: '2024-03-01T10:00:00.000Z' },
    })
  })

  it('says why a value cannot be read', () => {
    expect(comparand('old', 'number', 'equals')).toEqual({ ok: false, message: '"old" is not a number' })
    expect(comparand('', 'number', 'equals')).toMatchObject({ ok: false })
    expect(comparand('yes', 'boolean', 'equals')).toMatchObject({ ok: false, message: expect.stringContaining('not a boolean') })
    expect(comparand('03/01/2024', 'date', 'equals')).toMatchObject({ ok: false, message: expect.stringContaining('not a date') })
    expect(comparand(undefined, 'text', 'equals')).toMatchObject({
      ok: false,
      message: expect.stringContaining('value is required'),
    })
    expect(comparand({ a: 1 }, 'text', 'equals')).toMatchObject({
      ok: false,
      message: expect.stringContaining('not a single value'),
    })
  })

  it('checks pairs and lists', () => {
    expect(rangeOf([1, '5'], 'number', 'between')).toEqual({ ok: true, value: [{ value: 1 }, { value: 5 }] })
    expect(rangeOf([1], 'number', 'between')).toEqual({ ok: false, message: 'between takes a [low, high] pair' })
    expect(rangeOf([1, 'x'], 'number', 'notBetween')).toEqual({ ok: false, message: 'high bound: "x" is not a number' })
    expect(listOf(['a', 3], 'text', 'in')).toEqual({ ok: true, value: [{ value: 'a' }, { value: '3' }] })
    expect(listOf('a', 'text', 'notIn')).toEqual({ ok: false, message: 'notIn takes a list of values' })
    expect(listOf([1, 'two'], 'number', 'in')).toEqual({ ok: false, message: 'item 1: "two" is not a number' })
    expect(listOf([1, 2, 3], 'number', 'in', 2)).toMatchObject({ ok: false })
  })
})

describe('resolveFilters', () => {
  it('resolves nested groups with their logical operators; the top level is AND', () => {
    const issues: FilterIssue[] = []
    const tree = resolveFilters(
      [
        { columnTitle: 'Age', operator: 'gt', value: '65', logicalOperator: 'OR' },
        {
          columnTitle: 'ignored',
          operator: 'equals',
          logicalOperator: 'OR',
          conditions: [
            { columnTitle: 'Tags', operator: 'in', value: ['a'] },
            { columnTitle: 'Active', operator: 'isNull' },
          ],
        },
      ],
      lookup,
      'filters',
      issues,
    )
    expect(issues).toEqual([])
    expect(tree).toEqual({
      type: 'group',
      logic: 'AND',
      children: [
        { type: 'condition', column: COLUMNS[1], operator: 'greaterThan', values: [{ value: 65 }] },
        {
          type: 'group',
          logic: 'OR',
          children: [
            { type: 'condition', column: COLUMNS[5], operator: 'in', values: [{ value: 'a' }] },
            { type: 'condition', column: COLUMNS[2], operator: 'isNull', values: [] },
          ],
        },
      ],
    })
  })

  it('reports every problem with the path of its criterion', () => {
    const issues: FilterIssue[] = []
    resolveFilters(
      [
        { columnTitle: 'Ghost', operator: 'equals', value: 1 },
        {
          columnTitle: 'g',
          operator: 'equals',
          conditions: [{ columnTitle: 'Active', operator: 'between', value: [true, false] }],
        },
        { columnTitle: 'Age', operator: 'near', value: 1 },
        { columnTitle: 'Seen', operator: 'lessThan', value: 'tomorrow' },
      ],
      lookup,
      'view.filters',
      issues,
    )
    expect(issues.map((i) => i.path)).toEqual([
      'view.filters[0].columnTitle',
      'view.filters[1].conditions[0].operator',
      'view.filters[2].operator',
      'view.filters[3].value',
    ])
    expect(issues[1].message).toBe(
      'between cannot apply to boolean column "Active" (use one of equals, notEquals, in, notIn, isNull, isNotNull, isEmpty, isNotEmpty)',
    )
  })

  it('reads the cohort rule with its logic and the operator aliases', () => {
    const issues: FilterIssue[] = []
    const tree = resolveCohortRule(
      {
        conditions: [
          { field: 'Age', operator: 'lte', value: 80 },
          { field: 'Name', operator: 'ne', value: 'x' },
        ],
        logic: 'OR',
      },
      lookup,
      issues,
    )
    expect(issues).toEqual([])
    expect(tree).toMatchObject({ logic: 'OR', children: [{ operator: 'lessThanOrEqual' }, { operator: 'notEquals' }] })
    expect(resolveCohortRule(null, lookup, issues)).toEqual({ type: 'group', logic: 'AND', children: [] })
    resolveCohortRule({ conditions: [{ field: 'Nope', operator: 'eq', value: 1 }], logic: 'AND' }, lookup, issues)
    expect(issues).toEqual([{ path: 'cohortRule.conditions[0].field', message: 'unknown column "Nope"' }])
  })
})
