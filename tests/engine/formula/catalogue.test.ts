import { beforeAll, describe, expect, it } from 'vitest'
import { loadFhirPathEngine } from '../../../src/engine/fhirpath/engine.ts'
import {
  CATEGORIES,
  compileFormula,
  expressionContext,
  functionCatalogue,
  validateFormula,
} from '../../../src/engine/formula/index.ts'

// Expressions other than member paths need the engine, which the service loads on first need.
beforeAll(() => loadFhirPathEngine())

const clock = { now: () => new Date('2024-03-15T10:30:00Z') }

describe('the function catalogue', () => {
  const all = functionCatalogue()

  it('has at least 80 functions across the seven categories, each with a complete entry', () => {
    expect(all.length).toBeGreaterThanOrEqual(80)
    expect(new Set(all.map((f) => f.category))).toEqual(new Set(CATEGORIES))
    expect(new Set(all.map((f) => f.name)).size).toBe(all.length)
    for (const f of all) {
      expect(f.description.length, f.name).toBeGreaterThan(5)
      expect(f.syntax.startsWith(`${f.name}(`), f.name).toBe(true)
      expect(f.examples.length, f.name).toBeGreaterThan(0)
      for (const p of f.parameters) expect(p.description.length, `${f.name} ${p.name}`).toBeGreaterThan(0)
    }
  })

  it('covers the floor of FORMULAS.md', () => {
    const floor =
      'CONCAT LEFT RIGHT MID LEN LOWER UPPER PROPER TRIM SUBSTITUTE REPLACE FIND SEARCH REPT TEXTJOIN STARTS_WITH ENDS_WITH CONTAINS REGEX_MATCH REGEX_EXTRACT REGEX_REPLACE ' +
      'ABS ROUND ROUNDUP ROUNDDOWN FLOOR CEILING INT MOD POWER SQRT EXP LN LOG LOG10 SIGN SUM MIN MAX PRODUCT ' +
      'TODAY NOW DATE YEAR MONTH DAY HOUR MINUTE WEEKDAY WEEKNUM DATEADD DATEDIF DATEDIFF AGE DATETIME_FORMAT DATETIME_PARSE IS_BEFORE IS_AFTER EDATE EOMONTH NETWORKDAYS ' +
      'IF IFS SWITCH AND OR NOT XOR ISBLANK ISERROR IFERROR IFBLANK ISNUMBER ISTEXT ' +
      'CHOOSE FIRST LAST INDEX COUNTIF FHIRPATH ' +
      'AVERAGE MEDIAN MODE STDEV VAR COUNT COUNTA COUNTBLANK PERCENTILE QUARTILE ' +
      'VALUE TEXT TO_NUMBER TO_TEXT TO_BOOLEAN TO_DATE CONVERT BLANK'
    const names = new Set(all.map((f) => f.name))
    expect(floor.split(' ').filter((n) => !names.has(n))).toEqual([])
  })

  it('filters by category', () => {
    const dates = functionCatalogue('date')
    expect(dates.length).toBeGreaterThan(10)
    expect(dates.every((f) => f.category === 'date')).toBe(true)
    expect(dates.map((f) => f.name)).toContain('DATEDIF')
  })

  it('writes syntax with optional and repeated parameters', () => {
    const find = (name: string) => all.find((f) => f.name === name)
    expect(find('LEFT')?.syntax).toBe('LEFT(text, [count])')
    expect(find('SUM')?.syntax).toBe('SUM(number1, [number2, ...])')
    expect(find('ROUND')?.parameters).toEqual([
      { name: 'number', type: 'number', required: true, description: 'The number' },
      expect.objectContaining({ name: 'digits', required: false }),
    ])
  })

  describe('every example evaluates to its documented result', () => {
    const cases = all.flatMap((f) => f.examples.map((e) => [f.name, e.expression, e.result] as const))
    it.each(cases)('%s: %s', (_name, expression, result) => {
      const compiled = compileFormula(expression)
      expect(compiled.errors).toEqual([])
      const out = compiled.evaluate({ cells: {}, record: { resourceType: 'Patient' } }, clock)
      expect(out.error).toBeUndefined()
      expect(out.value).toEqual(result)
    })
  })

  it('examples are self-contained: no column references', () => {
    for (const f of all)
      for (const e of f.examples) expect(validateFormula({ formula: e.expression, columns: [] }).dependencies).toEqual([])
  })
})

describe('expressionContext', () => {
  it('lists the columns with their types, the functions and the constants', () => {
    const ctx = expressionContext([
      { name: 'Age', type: 'number', columnType: 'calculated' },
      { name: 'Birth Date', type: 'date', columnType: 'base' },
    ])
    expect(ctx.availableColumns).toEqual([
      { name: 'Age', type: 'number', columnType: 'calculated' },
      { name: 'Birth Date', type: 'date', columnType: 'base' },
    ])
    expect(ctx.functions).toBe(functionCatalogue())
    expect(ctx.constants.map((c) => c.name)).toEqual(['TRUE', 'FALSE'])
  })
})
