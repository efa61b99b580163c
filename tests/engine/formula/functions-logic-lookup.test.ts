import { describe, expect, it } from 'vitest'
import { code, run, value } from './helpers.ts'

describe('logical functions', () => {
  it('IF, IFS and SWITCH evaluate only the branch taken', () => {
    expect(value('IF({A} > 1, "big", 1 / 0)', { A: 5 })).toBe('big')
    expect(value('IF(FALSE, 1)')).toBe(false)
    expect(value('IF({A}, "yes", "no")', { A: null })).toBe('no')
    expect(value('IF("true", 1, 2)')).toBe(1)
    expect(code('IF("maybe", 1, 2)')).toBe('VALUE')
    expect(value('IFS(FALSE, 1 / 0, TRUE, "ok", TRUE, 1 / 0)')).toBe('ok')
    expect(code('IFS(FALSE, 1)')).toBe('NA')
    expect(value('SWITCH(2, 1, "one", 2, "two", 1 / 0)')).toBe('two')
    expect(value('SWITCH("X", "x", "lower matches")')).toBe('lower matches')
    expect(value('SWITCH(9, 1, "one", "other")')).toBe('other')
    expect(code('SWITCH(9, 1, "one")')).toBe('NA')
  })

  it('AND, OR and XOR evaluate every argument as Excel does, skipping blanks in lists', () => {
    expect(code('AND(FALSE, 1 / 0)')).toBe('DIV_ZERO')
    expect(code('OR(TRUE, 1 / 0)')).toBe('DIV_ZERO')
    expect(value('AND(ARRAY(TRUE, BLANK(), 1))')).toBe(true)
    expect(code('AND(BLANK())')).toBe('VALUE')
    expect(value('OR({A}, 0)', { A: 'yes' })).toBe(true)
    expect(value('XOR(TRUE, FALSE)')).toBe(true)
    expect(value('NOT({A})', { A: 0 })).toBe(true)
  })

  it('IFERROR, ISERROR and the IS… tests see errors instead of failing', () => {
    expect(value('IFERROR(1 / {A}, "none")', { A: 0 })).toBe('none')
    expect(value('IFERROR(1 / {A}, 1 / 0)', { A: 4 })).toBe(0.25)
    expect(code('IFERROR(1 / 0, SQRT(-1))')).toBe('NUM')
    expect(value('ISERROR(SQRT(-1))')).toBe(true)
    expect(value('ISERROR("fine")')).toBe(false)
    expect(value('ISNUMBER(1 / 0)')).toBe(false)
    expect(value('ISBLANK(1 / 0)')).toBe(false)
    expect(value('ISBLANK({A})', {})).toBe(true)
    expect(value('ISBLANK({A})', { A: [] })).toBe(true)
    expect(value('ISBLANK(0)')).toBe(false)
    expect(value('IFBLANK({A}, "n/a")', { A: null })).toBe('n/a')
    expect(value('IFBLANK({A}, 1 / 0)', { A: 3 })).toBe(3)
    expect(value('ISNUMBER({A})', { A: 3 })).toBe(true)
    expect(value('ISTEXT(3)')).toBe(false)
    expect(value('ISLOGICAL("TRUE")')).toBe(false)
    expect(value('ISDATE("2024-02-29")')).toBe(true)
  })
})

describe('lookup functions', () => {
  it('CHOOSE evaluates only the chosen value', () => {
    expect(value('CHOOSE(1, "a", 1 / 0)')).toBe('a')
    expect(code('CHOOSE(3, "a", "b")')).toBe('VALUE')
  })

  it('FIRST, LAST, INDEX and MATCH over lists and single values', () => {
    expect(value('FIRST({L})', { L: ['x', 'y'] })).toBe('x')
    expect(value('FIRST({L})', { L: [] })).toBeNull()
    expect(value('FIRST("solo")')).toBe('solo')
    expect(value('LAST({L})', { L: [1, 2, 3] })).toBe(3)
    expect(value('INDEX({L}, 2)', { L: ['a', 'b'] })).toBe('b')
    expect(code('INDEX({L}, 0)', { L: ['a'] })).toBe('REF')
    expect(value('MATCH("B", ARRAY("a", "b"))')).toBe(2)
  })

  it('COUNTIF, SUMIF and AVERAGEIF with Excel criteria', () => {
    const L = { L: [1, '5', 7, 'abc', 'Abd', null, '', true] }
    expect(value('COUNTIF({L}, ">=5")', L)).toBe(2)
    expect(value('COUNTIF({L}, "<>5")', L)).toBe(7)
    expect(value('COUNTIF({L}, 5)', L)).toBe(1)
    expect(value('COUNTIF({L}, "ab*")', L)).toBe(2)
    expect(value('COUNTIF({L}, "ab?")', L)).toBe(2)
    expect(value('COUNTIF({L}, "abc")', L)).toBe(1)
    expect(value('COUNTIF({L}, "")', L)).toBe(2)
    expect(value('COUNTIF({L}, "<>")', L)).toBe(6)
    expect(value('COUNTIF({L}, ">abc")', L)).toBe(1)
    expect(value('COUNTIF({L}, TRUE)', L)).toBe(1)
    expect(value('SUMIF({L}, ">1")', L)).toBe(12)
    expect(value('SUMIF(ARRAY("a", "b", "a"), "a", ARRAY(1, 2, 3))')).toBe(4)
    expect(code('SUMIF(ARRAY("a", "b"), "a", ARRAY(1))')).toBe('VALUE')
    expect(code('AVERAGEIF(ARRAY(1, 2), ">5")')).toBe('DIV_ZERO')
  })

  it('list helpers', () => {
    expect(value('ARRAY_JOIN({L})', { L: ['a', 1, null] })).toBe('a, 1, ')
    expect(value('ARRAY_UNIQUE(ARRAY(1, "1", 2))')).toEqual([1, 2])
    expect(value('ARRAY_COMPACT({L})', { L: [null, 'x', ''] })).toEqual(['x'])
    expect(value('ARRAY()')).toEqual([])
  })
})

describe('errors', () => {
  it('a list cannot be used as one number', () => {
    expect(run('ABS({L})', { L: [1, 2] }).error).toEqual({ code: 'VALUE', message: 'a list of several values is not a number' })
  })
})
