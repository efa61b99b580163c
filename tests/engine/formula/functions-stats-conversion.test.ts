import { describe, expect, it } from 'vitest'
import { code, value } from './helpers.ts'

describe('statistical functions', () => {
  it('average, median and mode with Excel rules for blanks, text and errors', () => {
    expect(value('AVERAGE({A}, {B}, 3)', { A: null, B: '1' })).toBe(2)
    expect(code('AVERAGE(ARRAY("x"))')).toBe('DIV_ZERO')
    expect(code('AVERAGE("x")')).toBe('VALUE')
    expect(value('MEDIAN(ARRAY(5, 1, 3))')).toBe(3)
    expect(code('MEDIAN(ARRAY())')).toBe('NUM')
    expect(value('MODE(ARRAY(3, 1, 1, 3))')).toBe(3)
    expect(code('MODE(1, 2, 3)')).toBe('NA')
  })

  it('spread: sample and population', () => {
    expect(value('VAR(2, 4, 4, 4, 5, 5, 7, 9)')).toBeCloseTo(4.571428571, 8)
    expect(value('VARP(ARRAY(2, 4, 4, 4, 5, 5, 7, 9))')).toBe(4)
    expect(code('STDEV(1)')).toBe('DIV_ZERO')
    expect(value('STDEVP(5)')).toBe(0)
  })

  it('counts', () => {
    expect(value('COUNT({L})', { L: [1, '2', 'x', null, true] })).toBe(2)
    expect(value('COUNT(TRUE, "3", "y")')).toBe(2)
    expect(value('COUNTA({L})', { L: [0, false, '', null, 'x'] })).toBe(3)
    expect(value('COUNTBLANK({L}, {M})', { L: [0, '', null], M: null })).toBe(3)
  })

  it('percentiles, quartiles and ranks', () => {
    expect(value('PERCENTILE(ARRAY(10, 20, 30, 40, 50), 0.9)')).toBe(46)
    expect(value('PERCENTILE({L}, 0)', { L: [3, 1, 2] })).toBe(1)
    expect(code('PERCENTILE(ARRAY(1, 2), 1.5)')).toBe('NUM')
    expect(value('QUARTILE(ARRAY(1, 2, 4, 7, 8, 9, 10, 12), 1)')).toBe(3.5)
    expect(value('QUARTILE(ARRAY(1, 2, 4), 4)')).toBe(4)
    expect(code('QUARTILE(ARRAY(1, 2, 4), 5)')).toBe('NUM')
    expect(value('LARGE(ARRAY(1, 5, 5, 2), 2)')).toBe(5)
    expect(code('SMALL(ARRAY(1, 2), 3)')).toBe('NUM')
  })
})

describe('conversion functions', () => {
  it('VALUE and TO_NUMBER', () => {
    expect(value('VALUE(" 1,234,567.5 ")')).toBe(1234567.5)
    expect(value('VALUE("-5%")')).toBe(-0.05)
    expect(value('VALUE({A})', { A: null })).toBe(0)
    expect(code('VALUE("12 kg")')).toBe('VALUE')
    expect(value('TO_NUMBER({A})', { A: null })).toBeNull()
    expect(value('TO_NUMBER(TRUE)')).toBe(1)
    expect(value('TO_NUMBER("1e3")')).toBe(1000)
    expect(code('TO_NUMBER("n/a")')).toBe('VALUE')
  })

  it('TEXT with Excel number and date formats', () => {
    expect(value('TEXT(1234567.891, "#,##0.0")')).toBe('1,234,567.9')
    expect(value('TEXT(5, "000")')).toBe('005')
    expect(value('TEXT(0.5, "#.##")')).toBe('.5')
    expect(value('TEXT(-1234.5, "#,##0.00")')).toBe('-1,234.50')
    expect(value('TEXT(-3, "0;(0)")')).toBe('(3)')
    expect(value('TEXT(12345, "0.0E+00")')).toBe('1.2E+04')
    expect(value('TEXT(3.5, "\\"$\\"0.00")')).toBe('$3.50')
    expect(value('TEXT(42, "General")')).toBe('42')
    expect(value('TEXT("2024-03-05T14:07:00Z", "dd mmm yyyy hh:mm")')).toBe('05 Mar 2024 14:07')
    expect(value('TEXT("2024-03-05T14:07:00Z", "h:mm AM/PM")')).toBe('2:07 PM')
    expect(value('TEXT("n/a", "0.00")')).toBe('n/a')
  })

  it('TO_TEXT, TO_BOOLEAN and TO_DATE', () => {
    expect(value('TO_TEXT({A})', { A: null })).toBe('')
    expect(value('TO_TEXT(1/3)')).toBe('0.333333333333333')
    expect(value('TO_TEXT(FALSE)')).toBe('FALSE')
    expect(value('TO_BOOLEAN("no")')).toBe(false)
    expect(value('TO_BOOLEAN(-1)')).toBe(true)
    expect(code('TO_BOOLEAN("perhaps")')).toBe('VALUE')
    expect(value('TO_DATE("2024-03-15T10:00:00+01:00")')).toBe('2024-03-15T09:00:00.000Z')
    expect(value('TO_DATE(45366.5)')).toBe('2024-03-15T12:00:00.000Z')
    expect(value('TO_DATE({A})', { A: '' })).toBeNull()
    expect(code('TO_DATE("15/03/2024")')).toBe('VALUE')
  })

  it('CONVERT between units of one kind, #N/A otherwise', () => {
    expect(value('CONVERT(1, "lbm", "kg")')).toBe(0.45359237)
    expect(value('CONVERT(212, "F", "C")')).toBe(100)
    expect(value('CONVERT(0, "C", "K")')).toBe(273.15)
    expect(value('CONVERT(180, "cm", "ft")')).toBeCloseTo(5.905511811, 8)
    expect(value('CONVERT(120, "mmHg", "kPa")')).toBeCloseTo(15.9987, 4)
    expect(value('CONVERT(500, "mL", "l")')).toBe(0.5)
    expect(code('CONVERT(1, "kg", "cm")')).toBe('NA')
    expect(code('CONVERT(1, "parsec", "m")')).toBe('NA')
  })
})
