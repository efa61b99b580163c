import { describe, expect, it } from 'vitest'
import { sameJson } from '../../src/lib/same-json.ts'

/** Values of every JSON kind, nested, with the near misses a comparison could confuse. */
const VALUES: unknown[] = [
  null,
  0,
  -0,
  1,
  1.5,
  '',
  '0',
  'null',
  'false',
  true,
  false,
  [],
  [null],
  [0],
  [''],
  [[]],
  {},
  { a: null },
  { a: 0 },
  { a: '' },
  { a: [] },
  { a: 1, b: 2 },
  { b: 2, a: 1 },
  { a: { b: [1, { c: false }] } },
  { a: { b: [1, { c: 0 }] } },
  ['x', { y: 'x' }],
]

describe('sameJson', () => {
  it('holds exactly when the JSON texts are the same, for every pair of values', () => {
    for (const value of VALUES) {
      for (const other of VALUES) {
        const stored = JSON.parse(JSON.stringify(other))
        expect(sameJson(value, stored), `${JSON.stringify(value)} vs ${JSON.stringify(other)}`).toBe(
          JSON.stringify(value) === JSON.stringify(other),
        )
      }
    }
  })

  it('counts what JSON would not keep as it is as different', () => {
    expect(sameJson(Number.NaN, null)).toBe(false)
    expect(sameJson(Number.POSITIVE_INFINITY, null)).toBe(false)
    expect(sameJson(undefined, undefined)).toBe(false)
    expect(sameJson({ a: undefined }, {})).toBe(false)
    expect(sameJson(new Date(0), JSON.parse(JSON.stringify(new Date(0))))).toBe(false)
    expect(sameJson([1, 2], { 0: 1, 1: 2 })).toBe(false)
    expect(sameJson({ 0: 1 }, [1])).toBe(false)
  })
})
