import { beforeAll, describe, expect, it } from 'vitest'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import { dependencyDifference, evaluationOrder, validateFormula } from '../../../src/engine/formula/index.ts'

// Expressions other than member paths need the engine, which the service loads on first need.
beforeAll(() => loadFhirPathEngine())

const columns = [
  { name: 'Age', type: 'number' },
  { name: 'Birth Date', type: 'date' },
  { name: 'Gender', type: 'text' },
  { name: 'Tags', type: 'array' },
  { name: 'Active', type: 'boolean' },
  { name: 'Note', type: 'json' },
]
const check = (formula: string, extra: Partial<Parameters<typeof validateFormula>[0]> = {}) =>
  validateFormula({ formula, columns, ...extra })

describe('validateFormula: references', () => {
  it('answers valid with the derived dependencies and the return type', () => {
    expect(check('IF({Age} > 65, {Gender} & "!", Patient.name.given)')).toEqual({
      valid: true,
      errors: [],
      dependencies: ['Age', 'Gender', 'Patient.name.given'],
      returnType: 'any',
    })
  })

  it('suggests the closest column for an unknown reference and for a bare word', () => {
    expect(check('{age} + Gendr').errors).toEqual([
      { type: 'reference', message: 'Unknown column {age}', position: 0, suggestion: 'did you mean {Age}?' },
      {
        type: 'reference',
        message: 'Unknown name "Gendr": column references are written in braces, e.g. {Gendr}',
        position: 8,
        suggestion: 'did you mean {Gender}?',
      },
    ])
  })

  it('reports an unknown function with the closest function name', () => {
    expect(check('ROUDN({Age}, 1)').errors).toEqual([
      { type: 'reference', message: 'Unknown function ROUDN', position: 0, suggestion: 'did you mean ROUND?' },
    ])
  })

  it('reports a wrong number of arguments at the call', () => {
    expect(check('1 + LEFT()').errors).toEqual([{ type: 'syntax', message: 'LEFT takes 1 to 2 arguments, got 0', position: 4 }])
    expect(check('SUM()').errors[0].message).toBe('SUM takes at least 1 argument, got 0')
    expect(check('PI(1)').errors[0].message).toBe('PI takes 0 arguments, got 1')
  })

  it('checks a FHIRPATH literal with the FHIRPath parser', () => {
    const [error] = check('FHIRPATH("Patient.name.where(")').errors
    expect(error).toMatchObject({ type: 'syntax', position: 9 })
    expect(error.message).toMatch(/^Invalid FHIRPath: /)
    expect(check('FHIRPATH("Patient.name.where(use = \'official\').given")').valid).toBe(true)
  })

  it('returns every error at once, ordered by position', () => {
    const { errors } = check('{Agee} * "x" + FOO(1) + (')
    expect(errors.map((e) => [e.type, e.position])).toEqual([
      ['reference', 0],
      ['reference', 15],
      ['syntax', 25],
    ])
  })
})

describe('validateFormula: types', () => {
  it('refuses a certain mismatch: a date or a list in arithmetic, with a hint', () => {
    expect(check('{Birth Date} * 2').errors).toEqual([
      {
        type: 'type',
        message: '{Birth Date} is a date: * needs numbers',
        position: 0,
        suggestion: 'use DATEADD(date, n, unit) or DATEDIF(start, end, unit)',
      },
    ])
    expect(check('1 + {Tags}').errors).toMatchObject([
      { type: 'type', position: 4, message: '{Tags} is a list: + needs numbers' },
    ])
    expect(check('-TODAY()').errors).toMatchObject([{ type: 'type', position: 1 }])
    expect(check('"abc" * 2').errors).toMatchObject([
      { type: 'type', message: '"abc" is not a number: * needs numbers', position: 0 },
    ])
  })

  it('refuses certain argument mismatches', () => {
    expect(check('ROUND({Birth Date}, 1)').errors).toEqual([
      { type: 'type', message: 'ROUND expects a number as number, but {Birth Date} is a date', position: 6 },
    ])
    expect(check('YEAR({Age})').errors).toMatchObject([{ type: 'type', position: 5 }])
    expect(check('YEAR("not a date")').errors).toMatchObject([{ type: 'type', position: 5 }])
    expect(check('NOT(TODAY())').errors).toMatchObject([{ type: 'type', position: 4 }])
  })

  it('lets uncertain types through to be coerced at run time', () => {
    for (const formula of [
      '{Gender} * 2',
      '"42" * 2',
      '{Note} + 1',
      'Patient.birthDate + 0',
      'YEAR({Gender})',
      'YEAR("2024-01-02")',
      'ROUND("3.5")',
      '{Active} + 1',
      'SUM({Tags})',
      'LEN({Tags})',
      'AGE({Birth Date})',
      'IF({Active}, 1, 2)',
      '{Birth Date} < TODAY()',
      '{Birth Date} & ""',
    ]) {
      expect(check(formula).errors, formula).toEqual([])
    }
  })

  it('infers the return type from literals, columns, operators and signatures', () => {
    const typeOf = (formula: string) => check(formula).returnType
    expect(typeOf('1')).toBe('number')
    expect(typeOf('{Gender}')).toBe('text')
    expect(typeOf('{Birth Date}')).toBe('date')
    expect(typeOf('{Age} & ""')).toBe('text')
    expect(typeOf('{Age} > 1')).toBe('boolean')
    expect(typeOf('DATEADD({Birth Date}, 1, "year")')).toBe('date')
    expect(typeOf('IF({Active}, "a", "b")')).toBe('text')
    expect(typeOf('IF({Active}, "a", 1)')).toBe('any')
    expect(typeOf('IFERROR(1 / {Age}, 0)')).toBe('number')
    expect(typeOf('SPLIT("a,b", ",")')).toBe('array')
    expect(typeOf('{Note}')).toBe('any')
    expect(typeOf('BLANK()')).toBe('any')
    expect(typeOf('(1')).toBe('any')
  })
})

describe('validateFormula: cycles', () => {
  const panel = [
    { name: 'Age', type: 'number' },
    { name: 'A', type: 'number', formula: '{Age} + 1' },
    { name: 'B', type: 'number', formula: '{A} * 2' },
    { name: 'C', type: 'number', formula: '{B} + {Age}' },
  ]

  it('spells a self-reference', () => {
    expect(validateFormula({ formula: '{X} + 1', columns: panel, selfName: 'X' }).errors).toEqual([
      { type: 'circular', message: 'Circular reference: {X} → {X}', position: 0 },
    ])
  })

  it('spells a cycle through other calculated columns from the column itself', () => {
    expect(validateFormula({ formula: '{Age} + {C}', columns: panel, selfName: 'A' }).errors).toEqual([
      { type: 'circular', message: 'Circular reference: {A} → {C} → {B} → {A}', position: 8 },
    ])
    expect(validateFormula({ formula: '{B}', columns: panel, selfName: 'A' }).errors[0].message).toBe(
      'Circular reference: {A} → {B} → {A}',
    )
  })

  it('accepts a formula that only reads columns downstream of nothing it feeds', () => {
    expect(validateFormula({ formula: '{C} + {B}', columns: panel, selfName: 'D' }).valid).toBe(true)
    expect(validateFormula({ formula: '{Age} * 3', columns: panel, selfName: 'A' }).valid).toBe(true)
  })
})

describe('validateFormula: dependencies', () => {
  it('accepts a sent list equal to the derived set in any order', () => {
    expect(check('{Age} + LEN(Patient.id)', { dependencies: ['Patient.id', 'Age'] }).valid).toBe(true)
  })

  it('names what is missing and which columns are extra', () => {
    expect(check('{Age} + LEN(Patient.id) + LEN({Gender})', { dependencies: ['Age', 'Active'] }).errors).toEqual([
      { type: 'reference', message: 'dependencies must list every column the formula references; missing: {Gender}' },
      { type: 'reference', message: 'dependencies must list every source path the formula reads; missing: Patient.id' },
      { type: 'reference', message: 'dependencies name columns the formula does not reference: {Active}' },
    ])
  })

  it('tolerates extra entries that name no column (paths read by FHIRPATH)', () => {
    const res = check('FHIRPATH("Patient.birthDate")', { dependencies: ['Patient.birthDate'] })
    expect(res).toMatchObject({ valid: true, dependencies: [] })
  })

  it('dependencyDifference tells the exact difference', () => {
    expect(dependencyDifference(['Age', 'Patient.id'], ['Patient.id', 'Weight', 'Weight'])).toEqual({
      missing: ['Age'],
      extra: ['Weight'],
    })
    expect(dependencyDifference(['A', 'B'], ['B', 'A'])).toEqual({ missing: [], extra: [] })
  })
})

describe('evaluationOrder', () => {
  it('puts each calculated column after the calculated columns it reads, keeping the given order otherwise', () => {
    const order = evaluationOrder([
      { name: 'D', formula: '{C} + {B}' },
      { name: 'Age' },
      { name: 'C', formula: '{B} * 2' },
      { name: 'X', formula: '{Age}' },
      { name: 'B', formula: '{Age} + 1' },
    ])
    expect(order.map((c) => c.name)).toEqual(['X', 'B', 'C', 'D'])
  })

  it('throws on a cycle, spelling it', () => {
    expect(() =>
      evaluationOrder([
        { name: 'A', formula: '{B}' },
        { name: 'B', formula: '{A}' },
      ]),
    ).toThrow('Calculated columns form a cycle: {A} → {B} → {A}')
  })
})
