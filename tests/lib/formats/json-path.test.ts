import { describe, expect, it } from 'vitest'
import { evaluatePath, isValidPath, parsePath } from '../../../src/lib/formats/json-path.ts'

const doc = { $weird: 7, a: { b: [{ c: 1, d: { e: 'x' } }, { c: 2 }], 'odd key': 5 }, list: [[1, 2], [3]] }

describe('evaluatePath', () => {
  it.each([
    ['$', doc],
    ['', doc],
    ['$.a.b[0].c', 1],
    ['a.b[1].c', 2],
    ['a.b[0].d.e', 'x'],
    ["a['odd key']", 5],
    ['a.b[*].c', [1, 2]],
    ['a.b[*].d.e', ['x']],
    ['list[*][*]', [1, 2, 3]],
    ['a.missing', undefined],
    ['$weird', 7],
    ['a.b[5]', undefined],
  ])('%s', (path, expected) => {
    expect(evaluatePath(doc, path)).toEqual(expected)
  })

  it('does not read inherited properties', () => {
    expect(evaluatePath({}, 'constructor')).toBeUndefined()
    expect(evaluatePath({}, '__proto__')).toBeUndefined()
  })
})

describe('parsePath', () => {
  it('rejects script expressions and malformed paths', () => {
    for (const bad of ['a..b', 'a[?(@.x)]', 'a[(1+1)]', 'a[', 'a]b']) expect(isValidPath(bad), bad).toBe(false)
    expect(() => parsePath('a[?(@.x)]')).toThrow(/Invalid path/)
  })
})
