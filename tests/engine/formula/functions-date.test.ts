import { describe, expect, it } from 'vitest'
import { daysInMonth } from '../../../src/engine/formula/dates.ts'
import { code, run, value } from './helpers.ts'

describe('date functions (UTC, fixed clock 2024-03-15T10:30:00Z)', () => {
  it('read the clock', () => {
    expect(value('TODAY()')).toBe('2024-03-15')
    expect(value('NOW()')).toBe('2024-03-15T10:30:00.000Z')
    expect(value('AGE("1980-03-16")')).toBe(43)
    expect(value('AGE("1980-03-15")')).toBe(44)
    // Without `at`, the age at the clock's instant: the same as at NOW() spelt out, a birth date with a time included.
    for (const birth of [
      '1980-03-15T10:29:59Z',
      '1980-03-15T10:30:01Z',
      '2024-03-15',
      '2024-03-16',
      '1999-12-31T23:00:00-03:00',
    ]) {
      expect(run(`AGE("${birth}")`)).toEqual(run(`AGE("${birth}", NOW())`))
    }
    expect(code('AGE("2024-03-16")')).toBe('NUM')
    expect(code('AGE("not a date")')).toBe('VALUE')
  })

  it('know the length of every month (leap years by the Gregorian rules)', () => {
    expect(value('DAY(EOMONTH("2024-02-10", 0))')).toBe(29)
    expect(value('DAY(EOMONTH("2023-02-10", 0))')).toBe(28)
    expect(value('DAY(EOMONTH("2000-02-10", 0))')).toBe(29)
    expect(value('DAY(EOMONTH("2100-02-10", 0))')).toBe(28)
    expect(code('YEAR("1900-02-29")')).toBe('VALUE')
    expect(value('YEAR("2000-02-29")')).toBe(2000)
    for (let month = 0; month < 12; month++) {
      for (const year of [1900, 1999, 2000, 2023, 2024, 2100, 2400]) {
        expect(daysInMonth(year, month), `${year}-${month + 1}`).toBe(new Date(Date.UTC(year, month + 1, 0)).getUTCDate())
      }
    }
    // A month index out of 0–11 counts on from the year's January, as Date.UTC does.
    expect(daysInMonth(2023, 13)).toBe(29)
    expect(daysInMonth(2024, -1)).toBe(31)
  })

  it('build and take apart dates, rolling over like Excel', () => {
    expect(value('DATE(2024, 2, 30)')).toBe('2024-03-01')
    expect(value('DATE(2024, 0, 1)')).toBe('2023-12-01')
    expect(value('DATE(2023, 3, 0)')).toBe('2023-02-28')
    expect(code('DATE(10000, 1, 1)')).toBe('NUM')
    expect(value('YEAR("2024-12-31T23:30:00-02:00")')).toBe(2025)
    expect(value('MONTH("2024-02")')).toBe(2)
    expect(value('HOUR("2024-03-15T14:30:00+02:00")')).toBe(12)
    expect(code('YEAR("2024-02-30")')).toBe('VALUE')
    expect(code('YEAR("yesterday")')).toBe('VALUE')
  })

  it('leave the result blank when a date argument is blank', () => {
    expect(value('YEAR({D})', { D: null })).toBeNull()
    expect(value('AGE({D})', { D: '' })).toBeNull()
    expect(value('DATEADD({D}, 1, "day")', {})).toBeNull()
    expect(value('DATEDIF({D}, TODAY(), "Y")', {})).toBeNull()
  })

  it('weekday and week numbers', () => {
    expect(value('WEEKDAY("2024-03-17")')).toBe(1)
    expect(value('WEEKDAY("2024-03-17", 2)')).toBe(7)
    expect(value('WEEKDAY("2024-03-17", 3)')).toBe(6)
    expect(code('WEEKDAY("2024-03-17", 4)')).toBe('NUM')
    expect(value('WEEKNUM("2024-01-01")')).toBe(1)
    expect(value('WEEKNUM("2023-01-01", 1)')).toBe(1)
    expect(value('WEEKNUM("2023-01-01", 2)')).toBe(1)
    expect(value('WEEKNUM("2023-01-02", 2)')).toBe(2)
    expect(value('ISOWEEKNUM("2024-12-30")')).toBe(1)
  })

  it('DATEADD keeps date-only values date-only and clamps month ends', () => {
    expect(value('DATEADD("2024-02-29", 1, "year")')).toBe('2025-02-28')
    expect(value('DATEADD("2024-01-31", 1, "quarter")')).toBe('2024-04-30')
    expect(value('DATEADD("2024-03-15", 36, "hours")')).toBe('2024-03-16T12:00:00.000Z')
    expect(value('DATEADD("2024-03-15T08:00:00Z", -1, "d")')).toBe('2024-03-14T08:00:00.000Z')
    expect(code('DATEADD("2024-03-15", 1, "fortnight")')).toBe('VALUE')
  })

  it('DATEDIF with every Excel unit, and #NUM! when start is after end', () => {
    const d = (unit: string) => value(`DATEDIF("2001-06-25", "2024-03-10", "${unit}")`)
    expect(d('Y')).toBe(22)
    expect(d('M')).toBe(272)
    expect(d('D')).toBe(8294)
    expect(d('YM')).toBe(8)
    expect(d('MD')).toBe(14)
    expect(d('YD')).toBe(259)
    expect(code('DATEDIF("2024-01-02", "2024-01-01", "D")')).toBe('NUM')
    expect(code('DATEDIF("2024-01-01", "2024-01-02", "W")')).toBe('NUM')
  })

  it('DATEDIFF counts whole units, signed, on date-times too', () => {
    expect(value('DATEDIFF("year", "2000-03-16", "2024-03-15")')).toBe(23)
    expect(value('DATEDIFF("month", "2024-01-31", "2024-02-29")')).toBe(0)
    expect(value('DATEDIFF("month", "2024-01-31", "2024-03-31")')).toBe(2)
    expect(value('DATEDIFF("week", "2024-03-01", "2024-03-15")')).toBe(2)
    expect(value('DATEDIFF("hour", "2024-03-15T10:00:00Z", "2024-03-15T07:30:00Z")')).toBe(-2)
    expect(value("DATEDIFF('year', {B}, NOW())", { B: '1980-01-01' })).toBe(44)
  })

  it('format and parse', () => {
    expect(value('DATETIME_FORMAT("2024-03-05T14:07:09Z", "dddd D MMMM YY, h:mm A [UTC]")')).toBe(
      'Tuesday 5 March 24, 2:07 PM UTC',
    )
    expect(value('DATETIME_FORMAT("2024-03-05")')).toBe('2024-03-05')
    expect(value('DATETIME_PARSE("3/7/2024 14:05", "M/D/YYYY HH:mm")')).toBe('2024-03-07T14:05:00.000Z')
    expect(value('DATETIME_PARSE("2024-03-07")')).toBe('2024-03-07')
    expect(code('DATETIME_PARSE("31/02/2024", "DD/MM/YYYY")')).toBe('VALUE')
  })

  it('compare and shift by months', () => {
    expect(value('IS_BEFORE("2024-03-15T09:00:00Z", "2024-03-15T10:00:00+00:00")')).toBe(true)
    expect(value('IS_AFTER({D}, "2020-01-01")', { D: null })).toBeNull()
    expect(value('EDATE("2024-03-31", 1)')).toBe('2024-04-30')
    expect(value('EOMONTH("2024-03-15", -1)')).toBe('2024-02-29')
    expect(value('EOMONTH("2024-12-15", 0)')).toBe('2024-12-31')
  })

  it('working days with holidays', () => {
    expect(value('NETWORKDAYS("2024-03-11", "2024-03-17")')).toBe(5)
    expect(value('NETWORKDAYS("2024-03-17", "2024-03-11")')).toBe(-5)
    expect(value('NETWORKDAYS("2024-03-11", "2024-03-17", ARRAY("2024-03-12", "2024-03-16"))')).toBe(4)
    expect(value('WORKDAY("2024-03-18", -1)')).toBe('2024-03-15')
    expect(value('WORKDAY("2024-03-15", 5, ARRAY("2024-03-18"))')).toBe('2024-03-25')
    expect(value('DAYS("2024-03-15T23:00:00Z", "2024-03-14T01:00:00Z")')).toBe(1)
  })
})
