/** Calendar functions: weekdays, week numbers and working days (UTC; weekends are Saturday and Sunday). */

import { DAY_MS, formatDate, startOfDay } from '../dates.ts'
import { fail } from '../errors.ts'
import { flatten, toDate, toNumber, type Value } from '../values.ts'
import { DATE, withDates } from './date-args.ts'
import { category } from './types.ts'

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

export const calendarFunctions = category('date', [
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
