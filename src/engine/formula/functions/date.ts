/**
 * Date functions. Dates are ISO 8601 texts computed in UTC; a blank date argument gives a blank
 * result (a missing birth date leaves the age blank instead of failing the row).
 */

import { addMonths, DAY_MS, formatDate, formatWith, parseDate, parseWith, startOfDay } from '../dates.ts'
import { fail } from '../errors.ts'
import { toDate, toNumber, toText, type Value } from '../values.ts'
import { DATE, withDates } from './date-args.ts'
import { addUnits, datedif, isTimeUnit, unitOf, unitsBetween } from './date-units.ts'
import { category } from './types.ts'

const part =
  (get: (d: Date) => number) =>
  ([v]: Value[]) =>
    withDates([v], (d) => get(new Date(d.ms)))

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
    call: ([b, at], ctx) => {
      if (at !== undefined) return withDates([b, at], (x, y) => datedif(x.ms, y.ms, 'Y'))
      // At the evaluation's instant, read as is: no text made of it and parsed again for every row.
      const birth = toDate(b)
      return birth === null ? null : datedif(birth.ms, ctx.now().getTime(), 'Y')
    },
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
])
