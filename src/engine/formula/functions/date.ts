/**
 * Date functions. Dates are ISO 8601 texts computed in UTC; a blank date argument gives a blank
 * result (a missing birth date leaves the age blank instead of failing the row).
 */

import { addMonths, DAY_MS, type DateValue, formatDate, formatWith, parseDate, parseWith, startOfDay } from '../dates.ts'
import { fail } from '../errors.ts'
import { flatten, toDate, toNumber, toText, type Value } from '../values.ts'
import { addUnits, datedif, isTimeUnit, unitOf, unitsBetween } from './date-units.ts'
import { category } from './types.ts'

const DATE: [string, string, string] = ['date', 'date', 'A date or date-time (ISO 8601)']

/** Runs `f` on the parsed dates, or answers blank when one of them is blank. */
function withDates(values: Value[], f: (...d: DateValue[]) => Value): Value {
  const dates = values.map(toDate)
  return dates.some((d) => d === null) ? null : f(...(dates as DateValue[]))
}
const part =
  (get: (d: Date) => number) =>
  ([v]: Value[]) =>
    withDates([v], (d) => get(new Date(d.ms)))
const dayOfWeek = (ms: number) => new Date(ms).getUTCDay()

function weekday(ms: number, type: number): number {
  const d = dayOfWeek(ms)
  if (type === 1) return d + 1
  if (type === 2) return ((d + 6) % 7) + 1
  if (type === 3) return (d + 6) % 7
  return fail('NUM', 'WEEKDAY type must be 1, 2 or 3')
}

function isoWeek(ms: number): number {
  const day = startOfDay(ms)
  const thursday = day + (3 - ((dayOfWeek(day) + 6) % 7)) * DAY_MS
  const yearStart = Date.UTC(new Date(thursday).getUTCFullYear(), 0, 1)
  return Math.floor((thursday - yearStart) / DAY_MS / 7) + 1
}

function holidaySet(v: Value | undefined): Set<number> {
  const out = new Set<number>()
  for (const h of flatten(v === undefined ? [] : [v])) {
    const d = toDate(h)
    if (d) out.add(startOfDay(d.ms))
  }
  return out
}

const isWorkday = (ms: number, holidays: Set<number>) => dayOfWeek(ms) % 6 !== 0 && !holidays.has(ms)

export const dateFunctions = category('date', [
  {
    name: 'TODAY',
    description: "Today's date (UTC) from the evaluation clock.",
    params: [],
    returns: 'date',
    examples: [['TODAY() = DATETIME_FORMAT(NOW(), "YYYY-MM-DD")', true, 'TODAY is the date part of NOW']],
    call: (_, ctx) => formatDate(startOfDay(ctx.now().getTime()), false),
  },
  {
    name: 'NOW',
    description: 'The current instant (ISO 8601, UTC) from the evaluation clock.',
    params: [],
    returns: 'date',
    examples: [['IS_AFTER(NOW(), "2020-01-01")', true, 'Now is after 2020']],
    call: (_, ctx) => ctx.now().toISOString(),
  },
  {
    name: 'DATE',
    description: 'The date of a year, month and day; months and days beyond their range roll over.',
    params: [
      ['year', 'number', 'The year (0–9999)'],
      ['month', 'number', 'The month (1–12, others roll over)'],
      ['day', 'number', 'The day of the month'],
    ],
    returns: 'date',
    examples: [['DATE(2024, 14, 1)', '2025-02-01', 'Month 14 rolls into the next year']],
    call: ([y, m, d]) => {
      const year = Math.trunc(toNumber(y))
      if (year < 0 || year > 9999) return fail('NUM', 'year must be between 0 and 9999')
      const date = new Date(0)
      date.setUTCFullYear(year, Math.trunc(toNumber(m)) - 1, Math.trunc(toNumber(d)))
      return formatDate(date.getTime(), false)
    },
  },
  {
    name: 'YEAR',
    description: 'The year of a date.',
    params: [DATE],
    returns: 'number',
    examples: [['YEAR("1987-06-05")', 1987, 'Year']],
    call: part((d) => d.getUTCFullYear()),
  },
  {
    name: 'MONTH',
    description: 'The month of a date (1–12).',
    params: [DATE],
    returns: 'number',
    examples: [['MONTH("1987-06-05")', 6, 'June']],
    call: part((d) => d.getUTCMonth() + 1),
  },
  {
    name: 'DAY',
    description: 'The day of the month of a date.',
    params: [DATE],
    returns: 'number',
    examples: [['DAY("1987-06-05")', 5, 'Day of month']],
    call: part((d) => d.getUTCDate()),
  },
  {
    name: 'HOUR',
    description: 'The hour of a date-time (0–23, UTC).',
    params: [DATE],
    returns: 'number',
    examples: [['HOUR("2024-03-15T14:30:00Z")', 14, 'Hour']],
    call: part((d) => d.getUTCHours()),
  },
  {
    name: 'MINUTE',
    description: 'The minute of a date-time.',
    params: [DATE],
    returns: 'number',
    examples: [['MINUTE("2024-03-15T14:30:00Z")', 30, 'Minute']],
    call: part((d) => d.getUTCMinutes()),
  },
  {
    name: 'SECOND',
    description: 'The second of a date-time.',
    params: [DATE],
    returns: 'number',
    examples: [['SECOND("2024-03-15T14:30:45Z")', 45, 'Second']],
    call: part((d) => d.getUTCSeconds()),
  },
  {
    name: 'WEEKDAY',
    description: 'The day of the week: type 1 Sunday=1…Saturday=7 (default), 2 Monday=1…Sunday=7, 3 Monday=0…Sunday=6.',
    params: [DATE, ['type?', 'number', '1, 2 or 3 (default 1)']],
    returns: 'number',
    examples: [['WEEKDAY("2024-03-15")', 6, 'A Friday is 6 with type 1']],
    call: ([v, t = 1]) => withDates([v], (d) => weekday(d.ms, Math.trunc(toNumber(t)))),
  },
  {
    name: 'WEEKNUM',
    description: 'The week of the year; the week of 1 January is week 1. Type 1: weeks start on Sunday (default), 2: on Monday.',
    params: [DATE, ['type?', 'number', '1 or 2 (default 1)']],
    returns: 'number',
    examples: [['WEEKNUM("2024-03-15")', 11, 'Week 11']],
    call: ([v, t = 1]) =>
      withDates([v], (d) => {
        const type = Math.trunc(toNumber(t))
        if (type !== 1 && type !== 2) return fail('NUM', 'WEEKNUM type must be 1 or 2')
        const day = startOfDay(d.ms)
        const jan1 = Date.UTC(new Date(day).getUTCFullYear(), 0, 1)
        const offset = (dayOfWeek(jan1) - (type === 2 ? 1 : 0) + 7) % 7
        return Math.floor(((day - jan1) / DAY_MS + offset) / 7) + 1
      }),
  },
  {
    name: 'ISOWEEKNUM',
    description: 'The ISO 8601 week number (weeks start on Monday; week 1 holds the first Thursday).',
    params: [DATE],
    returns: 'number',
    examples: [['ISOWEEKNUM("2021-01-01")', 53, '1 Jan 2021 belongs to week 53 of 2020']],
    call: ([v]) => withDates([v], (d) => isoWeek(d.ms)),
  },
  {
    name: 'DATEADD',
    description: 'Adds a number of units (years, quarters, months, weeks, days, hours, minutes, seconds) to a date.',
    params: [
      DATE,
      ['count', 'number', 'How many units (negative subtracts)'],
      ['unit', 'text', 'year, quarter, month, week, day, hour, minute or second'],
    ],
    returns: 'date',
    examples: [
      ['DATEADD("2024-01-31", 1, "month")', '2024-02-29', 'The day clamps to the end of February'],
      ['DATEADD("2024-03-15", -2, "weeks")', '2024-03-01', 'Two weeks earlier'],
    ],
    call: ([v, n, u]) =>
      withDates([v], (d) => {
        const unit = unitOf(toText(u))
        return formatDate(addUnits(d.ms, toNumber(n), unit), d.hasTime || isTimeUnit(unit))
      }),
  },
  {
    name: 'DATEDIF',
    description:
      'Excel DATEDIF: completed years (Y), months (M), days (D), or days/months ignoring the larger units (MD, YM, YD).',
    params: [
      ['start', 'date', 'The earlier date'],
      ['end', 'date', 'The later date'],
      ['unit', 'text', 'Y, M, D, MD, YM or YD'],
    ],
    returns: 'number',
    examples: [
      ['DATEDIF("1980-05-20", "2024-05-19", "Y")', 43, 'One day before the 44th birthday'],
      ['DATEDIF("2024-01-15", "2024-03-10", "D")', 55, 'Days between'],
    ],
    call: ([a, b, u]) => withDates([a, b], (x, y) => datedif(x.ms, y.ms, toText(u))),
  },
  {
    name: 'DATEDIFF',
    description: 'SQL-style twin of DATEDIF: whole units completed from start to end, negative when end is earlier.',
    params: [
      ['unit', 'text', 'year, quarter, month, week, day, hour, minute or second'],
      ['start', 'date', 'The start'],
      ['end', 'date', 'The end'],
    ],
    returns: 'number',
    examples: [
      ['DATEDIFF("year", "1980-05-20", "2024-05-20")', 44, 'Age on the birthday'],
      ['DATEDIFF("day", "2024-03-10", "2024-03-01")', -9, 'End before start'],
    ],
    call: ([u, a, b]) => withDates([a, b], (x, y) => unitsBetween(x.ms, y.ms, unitOf(toText(u)))),
  },
  {
    name: 'DAYS',
    description: 'The number of days from start to end (Excel argument order: end first).',
    params: [
      ['end', 'date', 'The end date'],
      ['start', 'date', 'The start date'],
    ],
    returns: 'number',
    examples: [['DAYS("2024-03-01", "2024-02-01")', 29, 'February 2024 has 29 days']],
    call: ([b, a]) => withDates([a, b], (x, y) => Math.round((startOfDay(y.ms) - startOfDay(x.ms)) / DAY_MS)),
  },
  {
    name: 'AGE',
    description: 'Age in whole years at a date (default: today); #NUM! when the birth date is later.',
    params: [
      ['birthDate', 'date', 'The birth date'],
      ['at?', 'date', 'The date of the age (default TODAY())'],
    ],
    returns: 'number',
    examples: [['AGE("1980-05-20", "2024-05-20")', 44, 'On the birthday']],
    call: ([b, at], ctx) =>
      withDates([b, at === undefined ? formatDate(ctx.now().getTime(), true) : at], (x, y) => datedif(x.ms, y.ms, 'Y')),
  },
  {
    name: 'DATETIME_FORMAT',
    description: 'Formats a date with tokens YYYY YY MMMM MMM MM M DD D dddd ddd HH H hh h mm ss A; [text] is literal.',
    params: [DATE, ['format?', 'text', 'The layout (default YYYY-MM-DD)']],
    returns: 'text',
    examples: [['DATETIME_FORMAT("2024-03-05", "DD MMM YYYY")', '05 Mar 2024', 'Day, short month, year']],
    call: ([v, f = 'YYYY-MM-DD']) => withDates([v], (d) => formatWith(d.ms, toText(f))),
  },
  {
    name: 'DATETIME_PARSE',
    description:
      'Reads a date from text laid out as the format (tokens YYYY MM M DD D HH H mm ss), or as ISO 8601 without a format.',
    params: [
      ['text', 'text', 'The text'],
      ['format?', 'text', 'The layout, e.g. DD/MM/YYYY'],
    ],
    returns: 'date',
    examples: [['DATETIME_PARSE("05/03/2024", "DD/MM/YYYY")', '2024-03-05', 'Day first']],
    call: ([t, f]) => {
      const text = toText(t)
      if (text.trim() === '') return null
      const d = f === undefined ? parseDate(text) : parseWith(text, toText(f))
      return d ? formatDate(d.ms, d.hasTime) : fail('VALUE', `"${text}" does not match the date format`)
    },
  },
  {
    name: 'IS_BEFORE',
    description: 'TRUE when the first date is before the second.',
    params: [
      ['date1', 'date', 'A date'],
      ['date2', 'date', 'The date to compare with'],
    ],
    returns: 'boolean',
    examples: [['IS_BEFORE("2024-01-01", "2024-06-30")', true, 'January is before June']],
    call: ([a, b]) => withDates([a, b], (x, y) => x.ms < y.ms),
  },
  {
    name: 'IS_AFTER',
    description: 'TRUE when the first date is after the second.',
    params: [
      ['date1', 'date', 'A date'],
      ['date2', 'date', 'The date to compare with'],
    ],
    returns: 'boolean',
    examples: [['IS_AFTER("2024-01-01", "2024-06-30")', false, 'January is not after June']],
    call: ([a, b]) => withDates([a, b], (x, y) => x.ms > y.ms),
  },
  {
    name: 'EDATE',
    description: 'The date a number of months before or after a date (end of month clamps).',
    params: [DATE, ['months', 'number', 'Months to add (negative subtracts)']],
    returns: 'date',
    examples: [['EDATE("2024-08-31", -6)', '2024-02-29', 'Six months earlier']],
    call: ([v, n]) => withDates([v], (d) => formatDate(addMonths(d.ms, toNumber(n)), d.hasTime)),
  },
  {
    name: 'EOMONTH',
    description: 'The last day of the month a number of months before or after a date.',
    params: [DATE, ['months', 'number', 'Months to add (0: the same month)']],
    returns: 'date',
    examples: [['EOMONTH("2024-01-15", 1)', '2024-02-29', 'End of next month']],
    call: ([v, n]) =>
      withDates([v], (d) => {
        const first = new Date(d.ms)
        const m = first.getUTCMonth() + Math.trunc(toNumber(n)) + 1
        return formatDate(Date.UTC(first.getUTCFullYear(), m, 0), false)
      }),
  },
  {
    name: 'NETWORKDAYS',
    description: 'Working days (Monday–Friday, minus holidays) from start to end, both included; negative when end is earlier.',
    params: [
      ['start', 'date', 'The start date'],
      ['end', 'date', 'The end date'],
      ['holidays?', 'array', 'Dates to skip'],
    ],
    returns: 'number',
    examples: [['NETWORKDAYS("2024-03-01", "2024-03-31")', 21, 'March 2024']],
    call: ([a, b, h]) =>
      withDates([a, b], (x, y) => {
        const holidays = holidaySet(h)
        const from = startOfDay(Math.min(x.ms, y.ms))
        const to = startOfDay(Math.max(x.ms, y.ms))
        if (to - from > 200 * 366 * DAY_MS) return fail('NUM', 'date range longer than 200 years')
        let n = 0
        for (let day = from; day <= to; day += DAY_MS) if (isWorkday(day, holidays)) n++
        return x.ms <= y.ms ? n : -n
      }),
  },
  {
    name: 'WORKDAY',
    description: 'The date a number of working days (Monday–Friday, minus holidays) after or before a date.',
    params: [DATE, ['days', 'number', 'Working days to add (negative goes back)'], ['holidays?', 'array', 'Dates to skip']],
    returns: 'date',
    examples: [['WORKDAY("2024-03-15", 1)', '2024-03-18', 'Friday + 1 working day is Monday']],
    call: ([v, n, h]) =>
      withDates([v], (d) => {
        const holidays = holidaySet(h)
        let left = Math.trunc(toNumber(n))
        if (Math.abs(left) > 100_000) return fail('NUM', 'too many working days')
        const step = left < 0 ? -DAY_MS : DAY_MS
        let day = startOfDay(d.ms)
        while (left !== 0) {
          day += step
          if (isWorkday(day, holidays)) left -= Math.sign(left)
        }
        return formatDate(day, false)
      }),
  },
])
