import { describe, expect, it } from 'vitest'
import {
  analyzeFormula,
  checkDependencies,
  extractReferences,
  findCycle,
  formatReference,
  renameReference,
  suggestClosest,
} from '../../../src/engine/formula/index.ts'

const cols = (...names: string[]) => names.map((name) => ({ name }))

describe('extractReferences', () => {
  it('finds every {Column Name} reference with its 0-based offset', () => {
    expect(extractReferences('{Age} + {Body Weight} * 2')).toEqual([
      { name: 'Age', position: 0 },
      { name: 'Body Weight', position: 8 },
    ])
  })

  it('unescapes \\} and \\\\ inside a reference and keeps other backslashes', () => {
    expect(extractReferences('{a\\}b} & {c\\\\d} & {e\\f}').map((r) => r.name)).toEqual(['a}b', 'c\\d', 'e\\f'])
  })

  it('skips braces inside double- and single-quoted text, honouring backslash escapes', () => {
    const refs = extractReferences(`CONCAT("{not}", 'it\\'s {also not}', "a \\" {still not}", {Yes})`)
    expect(refs.map((r) => r.name)).toEqual(['Yes'])
  })

  it('reads quotes inside a reference as part of the name', () => {
    expect(extractReferences(`{Patient's "Name"}`).map((r) => r.name)).toEqual([`Patient's "Name"`])
  })
})

describe('formatReference and renameReference', () => {
  it('escapes } and \\ so the name reads back unchanged', () => {
    const name = 'odd}name\\x'
    expect(extractReferences(formatReference(name))[0].name).toBe(name)
  })

  it('rewrites references to the old name only, not text literals or other names', () => {
    expect(renameReference('{Age} + {Age Group} & "{Age}" & {Age}', 'Age', 'Years')).toBe(
      '{Years} + {Age Group} & "{Age}" & {Years}',
    )
  })

  it('escapes the new name when it needs it', () => {
    expect(renameReference('{A} + 1', 'A', 'B}')).toBe('{B\\}} + 1')
  })
})

describe('suggestClosest', () => {
  it('suggests the closest candidate ignoring case', () => {
    expect(suggestClosest('age', ['Weight', 'Age', 'Height'])).toBe('Age')
    expect(suggestClosest('Wieght', ['Weight', 'Age', 'Height'])).toBe('Weight')
  })

  it('returns undefined when nothing is close', () => {
    expect(suggestClosest('Cholesterol', ['Age', 'Weight'])).toBeUndefined()
    expect(suggestClosest('ab', ['xy'])).toBeUndefined()
    expect(suggestClosest('x', [])).toBeUndefined()
  })
})

describe('findCycle', () => {
  it('returns null for an acyclic graph', () => {
    const graph = new Map([
      ['A', ['B', 'C']],
      ['B', ['C']],
      ['C', ['source.path']],
    ])
    expect(findCycle(graph)).toBeNull()
  })

  it('returns a self-loop, a two-node and a three-node cycle as names', () => {
    expect(findCycle(new Map([['A', ['A']]]))).toEqual(['A', 'A'])
    expect(
      findCycle(
        new Map([
          ['A', ['B']],
          ['B', ['A']],
        ]),
      ),
    ).toEqual(['A', 'B', 'A'])
    expect(
      findCycle(
        new Map([
          ['X', ['A']],
          ['A', ['B']],
          ['B', ['C']],
          ['C', ['A']],
        ]),
      ),
    ).toEqual(['A', 'B', 'C', 'A'])
  })
})

describe('analyzeFormula', () => {
  it('accepts a valid formula and lists its distinct references in order', () => {
    const res = analyzeFormula('IF({Age} > 65, {Age} * 2, {Weight})', { columns: cols('Age', 'Weight'), selfName: 'Score' })
    expect(res).toMatchObject({ references: ['Age', 'Weight'], dependencies: ['Age', 'Weight'], errors: [] })
  })

  it('accepts source paths, function calls, numbers and booleans without claiming references', () => {
    const res = analyzeFormula("DATEDIFF('year', Patient.birthDate, NOW()) + 1e-3 + .5 + TRUE + false", { columns: [] })
    expect(res).toMatchObject({ references: [], sourcePaths: ['Patient.birthDate'], errors: [], returnType: 'number' })
  })

  it('reports an unknown column with a suggestion and its position', () => {
    const res = analyzeFormula('1 + {age}', { columns: cols('Age') })
    expect(res.errors).toEqual([
      { type: 'reference', message: 'Unknown column {age}', position: 4, suggestion: 'did you mean {Age}?' },
    ])
  })

  it('omits the suggestion when no column is close', () => {
    const [error] = analyzeFormula('{Cholesterol}', { columns: cols('Age') }).errors
    expect(error.type).toBe('reference')
    expect(error).not.toHaveProperty('suggestion')
  })

  it('reports a bare word as a reference error suggesting the braced column', () => {
    const [error] = analyzeFormula('Age * 2', { columns: cols('Age') }).errors
    expect(error).toMatchObject({ type: 'reference', position: 0, suggestion: 'did you mean {Age}?' })
  })

  it('reports the syntax errors a scan can see, all of them, by position', () => {
    const errors = analyzeFormula('ROUND(({A} + 1) ) ) + "open', { columns: cols('A') }).errors
    expect(errors.map((e) => [e.type, e.position])).toEqual([
      ['syntax', 18],
      ['syntax', 22],
    ])
    expect(analyzeFormula('SUM({A}, 2', { columns: cols('A') }).errors).toEqual([
      { type: 'syntax', message: 'Unclosed (: missing )', position: 3 },
    ])
    expect(analyzeFormula('{A} + {B', { columns: cols('A') }).errors).toEqual([
      { type: 'syntax', message: 'Unterminated column reference: missing }', position: 6 },
    ])
    expect(analyzeFormula('   ', { columns: [] }).errors).toEqual([{ type: 'syntax', message: 'Formula is empty', position: 0 }])
  })

  it('reports a self-reference as circular, not as an unknown column', () => {
    expect(analyzeFormula('{A} + 1', { columns: [], selfName: 'A' }).errors).toEqual([
      { type: 'circular', message: 'Circular reference: {A} → {A}', position: 0 },
    ])
  })

  it('reports a cycle through other calculated columns, spelling it from the column itself', () => {
    const columns = [{ name: 'B', formula: '{C} + 1' }, { name: 'C', formula: '{A} * 2' }, { name: 'D' }]
    expect(analyzeFormula('{D} + {B}', { columns, selfName: 'A' }).errors).toEqual([
      { type: 'circular', message: 'Circular reference: {A} → {B} → {C} → {A}', position: 6 },
    ])
  })

  it('returns every error at once', () => {
    const errors = analyzeFormula('{Agee} + {Nope} + (', { columns: cols('Age'), selfName: 'X' }).errors
    expect(errors.map((e) => e.type)).toEqual(['reference', 'reference', 'syntax'])
  })
})

describe('checkDependencies', () => {
  const columns = new Set(['Age', 'Weight', 'Score'])

  it('accepts every referenced column in any order, plus entries that are not column names', () => {
    expect(checkDependencies(['Age', 'Weight'], ['Weight', 'Patient.birthDate', 'Age'], columns)).toEqual([])
  })

  it('names the referenced columns that are missing and the listed columns that are not referenced', () => {
    expect(checkDependencies(['Age', 'Weight'], ['Age', 'Score'], columns)).toEqual([
      { type: 'reference', message: 'dependencies must list every column the formula references; missing: {Weight}' },
      { type: 'reference', message: 'dependencies name columns the formula does not reference: {Score}' },
    ])
  })
})
