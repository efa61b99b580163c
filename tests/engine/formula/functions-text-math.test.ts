import { describe, expect, it } from 'vitest'
import { code, run, value } from './helpers.ts'

describe('text functions', () => {
  it('cut and measure text with Excel positions and blanks as ""', () => {
    expect(value('LEFT("abc")')).toBe('a')
    expect(value('LEFT("abc", 10)')).toBe('abc')
    expect(value('RIGHT("abc", 0)')).toBe('')
    expect(value('MID("abcdef", 3, 10)')).toBe('cdef')
    expect(code('MID("abc", 0, 1)')).toBe('VALUE')
    expect(code('LEFT("abc", -1)')).toBe('VALUE')
    expect(value('LEN({A})', { A: null })).toBe(0)
    expect(value('LEN(12.50)')).toBe(4)
    expect(value('UPPER({A}) & LOWER("X")', { A: 'ab' })).toBe('ABx')
    expect(value('PROPER("o\'neil mcDONALD")')).toBe("O'Neil Mcdonald")
    expect(value('TRIM("  a   b  ")')).toBe('a b')
  })

  it('find, search and replace', () => {
    expect(value('FIND("B", "abcB")')).toBe(4)
    expect(code('FIND("z", "abc")')).toBe('VALUE')
    expect(value('SEARCH("c*e", "ABCDE")')).toBe(3)
    expect(value('SEARCH("~*", "a*b")')).toBe(2)
    expect(value('SUBSTITUTE("aaa", "a", "b", 3)')).toBe('aab')
    expect(value('SUBSTITUTE("aaa", "", "b")')).toBe('aaa')
    expect(value('SUBSTITUTE("aaa", "a", "b", 9)')).toBe('aaa')
    expect(value('REPLACE("abcdef", 2, 3, "X")')).toBe('aXef')
    expect(value('REPT("ab", 0)')).toBe('')
    expect(code('REPT("ab", 20000)')).toBe('VALUE')
  })

  it('join, test and split', () => {
    expect(value('CONCAT("a", {N}, {B}, SPLIT("x,y", ","))', { N: 1.5, B: null })).toBe('a1.5xy')
    expect(value('TEXTJOIN("-", FALSE, "a", "", "b")')).toBe('a--b')
    expect(value('TEXTJOIN("-", TRUE, ARRAY("a", BLANK(), "c"))')).toBe('a-c')
    expect(value('STARTS_WITH({A}, "")', { A: null })).toBe(true)
    expect(value('ENDS_WITH("abc", "B")')).toBe(false)
    expect(value('CONTAINS({Tags}, "urgent")', { Tags: ['Routine', 'URGENT'] })).toBe(true)
    expect(value('CONTAINS({Tags}, "urg")', { Tags: ['Routine', 'URGENT'] })).toBe(false)
    expect(value('EXACT("a", "a")')).toBe(true)
    expect(value('SPLIT("", ",")')).toEqual([])
  })

  it('regular expressions, guarded against catastrophic backtracking', () => {
    expect(value('REGEX_MATCH("ABC", "(?i)^abc$")')).toBe(true)
    expect(value('REGEX_EXTRACT("id: 123-45", "\\d+")')).toBe('123')
    expect(code('REGEX_EXTRACT("abc", "\\d")')).toBe('NA')
    expect(value('REGEX_REPLACE("a1b22", "\\d+", "#")')).toBe('a#b#')
    expect(code('REGEX_MATCH("a", "(")')).toBe('VALUE')
    for (const evil of ['(a+)+$', '(a*)*b', '(\\w+\\s?)*$', '(x{1,3}){2,}', '(a)\\1']) {
      expect(code(`REGEX_MATCH("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "${evil}")`), evil).toBe('VALUE')
    }
    expect(
      code(
        `REGEX_MATCH(REPT("a", 20000) & REPT("a", 20000) & REPT("a", 20000) & REPT("a", 20000) & REPT("a", 20000) & REPT("a", 20000), "a")`,
      ),
    ).toBe('VALUE')
    expect(code(`REGEX_MATCH("a", "${'a'.repeat(501)}")`)).toBe('VALUE')
  })
})

describe('math functions', () => {
  it('round like Excel: halves away from zero, decimal-exact, negative digits', () => {
    expect(value('ROUND(1.005, 2)')).toBe(1.01)
    expect(value('ROUND(2.5)')).toBe(3)
    expect(value('ROUND(-2.5)')).toBe(-3)
    expect(value('ROUND(-0.4)')).toBe(0)
    expect(value('ROUND(1250, -2)')).toBe(1300)
    expect(value('ROUNDUP(1.001, 2)')).toBe(1.01)
    expect(value('ROUNDUP(-1.001, 2)')).toBe(-1.01)
    expect(value('ROUNDDOWN(1.999, 2)')).toBe(1.99)
    expect(value('ROUND("2.345", 2)')).toBe(2.35)
    expect(value('ROUND({A}, 2)', { A: null })).toBe(0)
    expect(value('TRUNC(5.9)')).toBe(5)
    expect(value('INT(5.9)')).toBe(5)
  })

  it('follow Excel sign rules for FLOOR, CEILING, MOD and QUOTIENT', () => {
    expect(value('FLOOR(-2.5, 2)')).toBe(-4)
    expect(value('FLOOR(-2.5, -2)')).toBe(-2)
    expect(value('FLOOR(0.3, 0.1)')).toBe(0.3)
    expect(code('FLOOR(2.5, -2)')).toBe('NUM')
    expect(code('FLOOR(2.5, 0)')).toBe('DIV_ZERO')
    expect(value('CEILING(-2.5, 2)')).toBe(-2)
    expect(value('CEILING(4.2)')).toBe(5)
    expect(value('MOD(3, -2)')).toBe(-1)
    expect(code('MOD(3, 0)')).toBe('DIV_ZERO')
    expect(value('QUOTIENT(-7, 2)')).toBe(-3)
  })

  it('power, roots and logarithms with #NUM! and #DIV/0!', () => {
    expect(value('POWER(2, 0.5) ^ 2')).toBeCloseTo(2)
    expect(code('POWER(-8, 1/3)')).toBe('NUM')
    expect(code('LN(0)')).toBe('NUM')
    expect(code('LOG(10, 1)')).toBe('DIV_ZERO')
    expect(value('LOG(100)')).toBe(2)
    expect(value('LOG10(0.001)')).toBe(-3)
    expect(value('EXP(0)')).toBe(1)
    expect(value('ABS("-3")')).toBe(3)
    expect(value('SIGN(0)')).toBe(0)
  })

  it('aggregate arguments and lists like Excel', () => {
    expect(value('SUM({A}, {B}, 1)', { A: null, B: '2' })).toBe(3)
    expect(value('SUM(ARRAY(1, "2", "x", TRUE, BLANK()))')).toBe(3)
    expect(code('SUM("x")')).toBe('VALUE')
    expect(value('SUM({L})', { L: [1.5, 2.5] })).toBe(4)
    expect(value('MIN(ARRAY())')).toBe(0)
    expect(value('MAX(ARRAY(-5, -2), -9)')).toBe(-2)
    expect(value('PRODUCT(ARRAY(2, 3), 0.5)')).toBe(3)
    expect(value('PRODUCT(ARRAY())')).toBe(0)
  })
})

describe('errors from functions', () => {
  it('carry a message', () => {
    expect(run('SQRT(-4)').error).toEqual({ code: 'NUM', message: 'square root of a negative number' })
  })
})
