/** Units and differences of DATEADD, DATEDIF, DATEDIFF and AGE (UTC calendar). */

import { addMonths, DAY_MS, daysInMonth, monthsBetween, startOfDay } from '../dates.ts'
import { fail } from '../errors.ts'

export type Unit = 'year' | 'quarter' | 'month' | 'week' | 'day' | 'hour' | 'minute' | 'second'

const UNITS: Record<string, Unit> = {
  year: 'year',
  years: 'year',
  y: 'year',
  yy: 'year',
  yyyy: 'year',
  quarter: 'quarter',
  quarters: 'quarter',
  q: 'quarter',
  month: 'month',
  months: 'month',
  m: 'month',
  mm: 'month',
  week: 'week',
  weeks: 'week',
  w: 'week',
  wk: 'week',
  day: 'day',
  days: 'day',
  d: 'day',
  dd: 'day',
  hour: 'hour',
  hours: 'hour',
  h: 'hour',
  hh: 'hour',
  minute: 'minute',
  minutes: 'minute',
  mi: 'minute',
  min: 'minute',
  n: 'minute',
  second: 'second',
  seconds: 'second',
  s: 'second',
  ss: 'second',
}

const FIXED_MS: Partial<Record<Unit, number>> = { week: 7 * DAY_MS, day: DAY_MS, hour: 3_600_000, minute: 60_000, second: 1000 }
const MONTHS: Partial<Record<Unit, number>> = { year: 12, quarter: 3, month: 1 }

/** `"years"`, `"Y"`, `"month"`, `"d"`, `"minutes"`… (case-insensitive; `m` is month). */
export function unitOf(text: string): Unit {
  return (
    UNITS[text.trim().toLowerCase()] ??
    fail('VALUE', `unknown date unit "${text}" (use year, quarter, month, week, day, hour, minute or second)`)
  )
}

export const isTimeUnit = (u: Unit) => u === 'hour' || u === 'minute' || u === 'second'

/** `ms` plus n units; months clamp to the end of the target month. */
export function addUnits(ms: number, n: number, unit: Unit): number {
  const months = MONTHS[unit]
  if (months !== undefined) return addMonths(ms, Math.trunc(n) * months)
  return ms + Math.trunc(n) * (FIXED_MS[unit] as number)
}

/** Whole units completed from `a` to `b`, negative when b is before a. */
export function unitsBetween(a: number, b: number, unit: Unit): number {
  if (b < a) return -unitsBetween(b, a, unit)
  const months = MONTHS[unit]
  if (months !== undefined) return Math.floor(monthsBetween(a, b) / months)
  return Math.floor((b - a) / (FIXED_MS[unit] as number))
}

/** Excel DATEDIF(start, end, unit) on the date parts: Y, M, D, MD, YM, YD. */
export function datedif(start: number, end: number, unitText: string): number {
  const a = startOfDay(start)
  const b = startOfDay(end)
  if (a > b) return fail('NUM', 'start date is after end date')
  const unit = unitText.trim().toUpperCase()
  const da = new Date(a)
  const db = new Date(b)
  switch (unit) {
    case 'Y':
      return Math.floor(monthsBetween(a, b) / 12)
    case 'M':
      return monthsBetween(a, b)
    case 'D':
      return Math.round((b - a) / DAY_MS)
    case 'YM':
      return monthsBetween(a, b) % 12
    case 'MD': {
      const diff = db.getUTCDate() - da.getUTCDate()
      if (diff >= 0) return diff
      const prev = new Date(Date.UTC(db.getUTCFullYear(), db.getUTCMonth(), 0))
      return diff + daysInMonth(prev.getUTCFullYear(), prev.getUTCMonth())
    }
    case 'YD': {
      let shifted = addMonths(a, (db.getUTCFullYear() - da.getUTCFullYear()) * 12)
      if (shifted > b) shifted = addMonths(shifted, -12)
      return Math.round((b - shifted) / DAY_MS)
    }
    default:
      return fail('NUM', `unknown DATEDIF unit "${unitText}" (use Y, M, D, MD, YM or YD)`)
  }
}
