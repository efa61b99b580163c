import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { beforeAll, describe, expect, it } from 'vitest'
import { compileFhirPath } from '../../../src/engine/fhirpath/compile.ts'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'

/**
 * join(), lowBoundary() and highBoundary() as the SQL-on-FHIR v2 tests expect them
 * (src/engine/fhirpath/functions.ts). The cases are those of the official suite
 * (tests/fixtures/sql-on-fhir-v2/tests: fn_join.json, fn_boundary.json and the `string
 * join` tests of fhirpath.json), copied here with their resources and expected cells, a `null`
 * cell being an empty result; then the FHIRPath specification's examples and edge cases.
 */

beforeAll(() => loadFhirPathEngine())

/** The cell of one column as the suite writes it: the single value, or null for none. */
const cell = (expression: string, resource: unknown) => {
  const result = compileFhirPath(expression).evaluate(resource)
  expect(result.length).toBeLessThanOrEqual(1)
  return result.length === 0 ? null : result[0]
}

/** The package itself, without our functions: what the canaries watch. */
const raw = (expression: string, resource: unknown = {}) => fhirpath.evaluate(resource as object, expression, undefined, r4)

// fhirpath.json
const pt1 = {
  resourceType: 'Patient',
  id: 'pt1',
  managingOrganization: { reference: 'Organization/o1' },
  name: [
    { family: 'f1.1', use: 'official', given: ['g1.1.1', 'g1.1.2'] },
    { family: 'f1.2', given: ['g1.2.1'] },
  ],
  active: true,
}
const pt2 = {
  resourceType: 'Patient',
  id: 'pt2',
  managingOrganization: { reference: 'http://myapp.com/prefix/Organization/o2' },
  name: [{ family: 'f2.1' }, { family: 'f2.2', use: 'official' }],
  active: false,
}
const pt3 = { resourceType: 'Patient', id: 'pt3' }
// fn_join.json
const p1 = { resourceType: 'Patient', id: 'p1', name: [{ use: 'official', given: ['p1.g1', 'p1.g2'] }] }
// fn_boundary.json
const o1 = { resourceType: 'Observation', id: 'o1', code: { text: 'code' }, status: 'final', valueQuantity: { value: 1.0 } }
const o2 = { resourceType: 'Observation', id: 'o2', code: { text: 'code' }, status: 'final', valueDateTime: '2010-10-10' }
const o3 = { resourceType: 'Observation', id: 'o3', code: { text: 'code' }, status: 'final' }
const o4 = { resourceType: 'Observation', id: 'o4', code: { text: 'code' }, status: 'final', valueTime: '12:34:00' }
const birth = { resourceType: 'Patient', id: 'p1', birthDate: '1970-06' }
const observations = [o1, o2, o3, o4]

/** [suite file: test title, path, resources, expected cells in the same order]. */
const suite: [string, string, object[], unknown[]][] = [
  ['fhirpath.json: string join', "name.given.join(', ' )", [pt1, pt2, pt3], ['g1.1.1, g1.1.2, g1.2.1', '', '']],
  ['fhirpath.json: string join: default separator', 'name.given.join()', [pt1, pt2, pt3], ['g1.1.1g1.1.2g1.2.1', '', '']],
  ['fn_join.json: join with comma', "name.given.join(',')", [p1], ['p1.g1,p1.g2']],
  ['fn_join.json: join with empty value', "name.given.join('')", [p1], ['p1.g1p1.g2']],
  ['fn_join.json: join with no value - default to no separator', 'name.given.join()', [p1], ['p1.g1p1.g2']],
  ['fn_boundary.json: decimal lowBoundary', 'value.ofType(Quantity).value.lowBoundary()', observations, [0.95, null, null, null]],
  [
    'fn_boundary.json: decimal highBoundary',
    'value.ofType(Quantity).value.highBoundary()',
    observations,
    [1.05, null, null, null],
  ],
  [
    'fn_boundary.json: datetime lowBoundary',
    'value.ofType(dateTime).lowBoundary()',
    observations,
    [null, '2010-10-10T00:00:00.000+14:00', null, null],
  ],
  [
    'fn_boundary.json: datetime highBoundary',
    'value.ofType(dateTime).highBoundary()',
    observations,
    [null, '2010-10-10T23:59:59.999-12:00', null, null],
  ],
  ['fn_boundary.json: date lowBoundary', 'birthDate.lowBoundary()', [birth], ['1970-06-01']],
  ['fn_boundary.json: date highBoundary', 'birthDate.highBoundary()', [birth], ['1970-06-30']],
  ['fn_boundary.json: time lowBoundary', 'value.ofType(time).lowBoundary()', observations, [null, null, null, '12:34:00.000']],
  ['fn_boundary.json: time highBoundary', 'value.ofType(time).highBoundary()', observations, [null, null, null, '12:34:00.999']],
]

describe('the SQL-on-FHIR conformance cases', () => {
  for (const [title, path, resources, expected] of suite) {
    it(`${title}: ${path}`, () => {
      expect(resources.map((resource) => cell(path, resource))).toEqual(expected)
    })
  }
})

describe('join()', () => {
  const names = (...given: string[][]) => ({ resourceType: 'Patient', id: 'x', name: given.map((g) => ({ given: g })) })

  it('answers "" for an empty input, with or without a separator', () => {
    for (const path of ["name.given.join(',')", "name.given.join('')", 'name.given.join()', "{}.join(', ')"]) {
      expect(compileFhirPath(path).evaluate(pt3)).toEqual([''])
    }
  })

  it('answers the single string of a one-element input, whatever the separator', () => {
    expect(compileFhirPath("name.given.join(', ')").evaluate(names(['Ada']))).toEqual(['Ada'])
    expect(compileFhirPath('name.given.join()').evaluate(names(['Ada']))).toEqual(['Ada'])
  })

  it('joins many elements across repetitions, in document order', () => {
    expect(compileFhirPath("name.given.join(' | ')").evaluate(names(['Ada', 'Augusta'], ['Addie']))).toEqual([
      'Ada | Augusta | Addie',
    ])
    expect(compileFhirPath('name.given.join()').evaluate(names(['a', ''], ['b']))).toEqual(['ab'])
  })

  it('keeps empty strings of the input as empty parts', () => {
    expect(compileFhirPath("name.given.join(',')").evaluate(names(['', '']))).toEqual([','])
  })

  it('refuses an input that is not strings, as the package does', () => {
    expect(() => compileFhirPath('(1 | 2).join()').evaluate({})).toThrow('Join requires a collection of strings.')
  })
})

describe('lowBoundary() and highBoundary()', () => {
  const value = (valueQuantity: unknown) => ({ resourceType: 'Observation', id: 'o', status: 'final', valueQuantity })
  const both = (path: string, resource: unknown = {}) => [
    cell(`${path}.lowBoundary()`, resource),
    cell(`${path}.highBoundary()`, resource),
  ]

  it('bounds a decimal at its own precision', () => {
    expect(both('value.ofType(Quantity).value', value({ value: 1.5 }))).toEqual([1.45, 1.55])
    expect(both('value.ofType(Quantity).value', value({ value: 1.587 }))).toEqual([1.5865, 1.5875])
    expect(both('value.ofType(Quantity).value', value({ value: -1.0 }))).toEqual([-1.05, -0.95])
    // The specification's examples.
    expect(both('1.587')).toEqual([1.5865, 1.5875])
    expect(both('1.0')).toEqual([0.95, 1.05])
    expect([cell('1.587.lowBoundary(6)', {}), cell('1.587.highBoundary(6)', {})]).toEqual([1.5865, 1.5875])
    expect([cell('1.587.lowBoundary(2)', {}), cell('1.587.highBoundary(2)', {})]).toEqual([1.58, 1.59])
    expect([cell('1.587.lowBoundary(-1)', {}), cell('1.587.highBoundary(-1)', {})]).toEqual([null, null])
  })

  it('takes a whole-number FHIR decimal at one decimal place, an integer at its own', () => {
    // JSON parsing makes `1.0` the number 1: a FHIR decimal is read back as `1.0`.
    expect(both('value.ofType(Quantity).value', value({ value: 120 }))).toEqual([119.95, 120.05])
    expect(both('value.ofType(integer)', { resourceType: 'Observation', id: 'o', status: 'final', valueInteger: 3 })).toEqual([
      2.5, 3.5,
    ])
    expect(both('1')).toEqual([0.5, 1.5])
    expect(both('amount', { amount: 1 })).toEqual([0.5, 1.5])
  })

  it('gives a date-time without an offset the earliest (+14:00) and latest (-12:00) ones', () => {
    expect(both('@2014-01-01T08')).toEqual(['2014-01-01T08:00:00.000+14:00', '2014-01-01T08:59:59.999-12:00'])
    expect([cell('@2014-01-01T08.lowBoundary(17)', {}), cell('@2014-01-01T08.highBoundary(17)', {})]).toEqual([
      '2014-01-01T08:00:00.000+14:00',
      '2014-01-01T08:59:59.999-12:00',
    ])
    const at = (valueDateTime: string) => ({ resourceType: 'Observation', id: 'o', status: 'final', valueDateTime })
    expect(both('value.ofType(dateTime)', at('2010-10-10T10'))).toEqual([
      '2010-10-10T10:00:00.000+14:00',
      '2010-10-10T10:59:59.999-12:00',
    ])
    expect(both('value.ofType(dateTime)', at('2010'))).toEqual(['2010-01-01T00:00:00.000+14:00', '2010-12-31T23:59:59.999-12:00'])
  })

  it('keeps the offset a date-time has, and adds none without a time part', () => {
    expect(both('@2014-01-01T08:05+08:00')).toEqual(['2014-01-01T08:05:00.000+08:00', '2014-01-01T08:05:59.999+08:00'])
    const at = { resourceType: 'Observation', id: 'o', status: 'final', valueDateTime: '2010-10-10T10:00:00Z' }
    expect(both('value.ofType(dateTime)', at)).toEqual(['2010-10-10T10:00:00.000Z', '2010-10-10T10:00:00.999Z'])
    expect([cell('@2014.lowBoundary(6)', {}), cell('@2014.highBoundary(6)', {})]).toEqual(['2014-01', '2014-12'])
    expect([cell('@2014-01-01T08.lowBoundary(8)', {}), cell('@2014-01-01T08.highBoundary(8)', {})]).toEqual([
      '2014-01-01',
      '2014-01-01',
    ])
  })

  it('answers a date-time the rest of the expression compares as one, not a text', () => {
    const o = { resourceType: 'Observation', id: 'o', status: 'final', valueDateTime: '2010-10-10' }
    // 2010-10-10T00:00+14:00 is 2010-10-09T10:00Z; 23:59:59.999-12:00 is 2010-10-11T11:59:59.999Z.
    expect(cell('value.ofType(dateTime).lowBoundary() < @2010-10-09T10:00:00.001Z', o)).toBe(true)
    expect(cell('value.ofType(dateTime).highBoundary() > @2010-10-11T11:59:59.998Z', o)).toBe(true)
  })

  it('bounds dates and times without offsets', () => {
    expect(both('@T10:30')).toEqual(['10:30:00.000', '10:30:59.999'])
    expect([cell('@T10:30.lowBoundary(9)', {}), cell('@T10:30.highBoundary(9)', {})]).toEqual(['10:30:00.000', '10:30:59.999'])
    expect(both('@2014-02')).toEqual(['2014-02-01', '2014-02-28'])
  })

  it('answers empty for an empty input and refuses several values or another type', () => {
    expect(both('{}')).toEqual([null, null])
    expect(() => compileFhirPath('(1.5 | 2.5).lowBoundary()').evaluate({})).toThrow(/Unexpected collection/)
    expect(() => compileFhirPath("'abc'.highBoundary()").evaluate({})).toThrow(/Expected a Decimal, Date, DateTime, or Time/)
  })
})

describe('FHIRPATH() in formulas', () => {
  it('uses the same functions as base columns', async () => {
    const { compilePath } = await import('../../../src/engine/formula/source.ts')
    expect(compilePath("name.given.join(', ')")(p1)).toBe('p1.g1, p1.g2')
    expect(compilePath("name.given.join(', ')")(pt3)).toBe('')
    expect(compilePath('value.ofType(Quantity).value.lowBoundary()')(o1)).toBe(0.95)
    expect(compilePath('value.ofType(dateTime).highBoundary()')(o2)).toBe('2010-10-10T23:59:59.999-12:00')
  })
})

/**
 * Canaries: the `fhirpath` package's own answers, which our functions replace. When one of these
 * fails, the package has changed that function (fixed it, we expect): check its new answers against
 * the cases above, and remove our override from src/engine/fhirpath/functions.ts if they agree.
 */
describe('library canaries (the fhirpath package without our functions)', () => {
  it('join() over an empty input answers empty, not ""', () => {
    expect(raw("name.given.join(',')", pt3)).toEqual([])
    expect(raw('name.given.join()', pt3)).toEqual([])
  })

  it('lowBoundary()/highBoundary() read the FHIR decimal 1.0 (parsed from JSON as 1) as an integer: 0.5/1.5', () => {
    expect(raw('value.ofType(Quantity).value.lowBoundary()', o1)).toEqual([0.5])
    expect(raw('value.ofType(Quantity).value.highBoundary()', o1)).toEqual([1.5])
  })

  it('lowBoundary()/highBoundary() leave a date-time without an offset without one', () => {
    expect(raw('value.ofType(dateTime).lowBoundary()', o2)).toEqual(['2010-10-10T00:00:00.000'])
    expect(raw('value.ofType(dateTime).highBoundary()', o2)).toEqual(['2010-10-10T23:59:59.999'])
    expect(raw('@2014-01-01T08.lowBoundary()')).toEqual(['2014-01-01T08:00:00.000'])
    expect(raw('@2014-01-01T08.highBoundary()')).toEqual(['2014-01-01T08:59:59.999'])
  })
})
