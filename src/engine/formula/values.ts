/**
 * Run-time values and the spreadsheet coercions of FORMULAS.md "Values and types": a value is a
 * number, text, boolean, date (an ISO 8601 text), array, blank (null), or an object passed through
 * from a source record. Coercions throw FormulaError; the cell catches it.
 */

import { isIsoDate, parseDate } from './dates.ts'
import { fail } from './errors.ts'

export type Value = number | string | boolean | null | Value[] | { [key: string]: unknown }

/** A cell value read from storage or a FHIRPath result, with `undefined` as blank. */
export const normalize = (v: unknown): Value => (v === undefined ? null : (v as Value))

/** A one-element array is its element and an empty one is blank; other values are unchanged. */
export function scalar(v: Value): Value {
  if (!Array.isArray(v)) return v
  if (v.length === 0) return null
  if (v.length === 1) return scalar(v[0])
  return v
}

export const isBlank = (v: Value) => v === null || v === '' || (Array.isArray(v) && v.length === 0)

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

/** The number a text spells (`" 42 "`, `"1e3"`, `"12%"` is not one), or undefined. */
export function parseNumber(text: string): number | undefined {
  const t = text.trim()
  return NUMERIC.test(t) ? Number(t) : undefined
}

/** Arithmetic coercion: blank and "" → 0, TRUE → 1, numeric text → its number, else #VALUE!. */
export function toNumber(value: Value): number {
  const v = scalar(value)
  if (typeof v === 'number') return v
  if (v === null) return 0
  if (typeof v === 'boolean') return v ? 1 : 0
  if (typeof v === 'string') {
    if (v.trim() === '') return 0
    const n = parseNumber(v)
    if (n !== undefined) return n
    return fail('VALUE', isIsoDate(v) ? `"${v}" is a date, not a number` : `"${v}" is not a number`)
  }
  return fail('VALUE', Array.isArray(v) ? 'a list of several values is not a number' : 'an object is not a number')
}

/** Numbers as a spreadsheet shows them: at most 15 significant digits, no trailing zeros. */
export function formatNumber(n: number): string {
  if (Number.isInteger(n)) return String(n)
  return String(Number(n.toPrecision(15)))
}

/** Text coercion: blank → "", numbers up to 15 digits, TRUE/FALSE, lists joined with ", ". */
export function toText(value: Value): string {
  if (value === null) return ''
  if (typeof value === 'string') return value
  if (typeof value === 'number') return formatNumber(value)
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE'
  if (Array.isArray(value)) return value.map(toText).join(', ')
  return JSON.stringify(value)
}

/** Logical coercion: numbers ≠ 0, "TRUE"/"FALSE"/"yes"/"no"/"1"/"0" (any case), blank → FALSE. */
export function toBoolean(value: Value): boolean {
  const v = scalar(value)
  if (typeof v === 'boolean') return v
  if (typeof v === 'number') return v !== 0
  if (v === null) return false
  if (typeof v === 'string') {
    const t = v.trim().toLowerCase()
    if (t === '' || t === 'false' || t === 'no' || t === '0') return false
    if (t === 'true' || t === 'yes' || t === '1') return true
    return fail('VALUE', `"${v}" is not TRUE or FALSE`)
  }
  return fail('VALUE', 'a list of several values is not TRUE or FALSE')
}

/** A date argument as epoch milliseconds (UTC) and whether it carries a time; blank → null. */
export function toDate(value: Value): { ms: number; hasTime: boolean } | null {
  const v = scalar(value)
  if (v === null || v === '') return null
  if (typeof v === 'string') {
    const d = parseDate(v)
    if (d) return d
    return fail('VALUE', `"${v}" is not a date (expected ISO 8601 such as 2024-01-31)`)
  }
  return fail('VALUE', `${toText(v)} is not a date (expected ISO 8601 text such as 2024-01-31)`)
}

/** Every element of the arguments, arrays flattened one level deep or more. */
export function flatten(values: readonly Value[]): Value[] {
  const out: Value[] = []
  const add = (v: Value) => {
    if (Array.isArray(v)) for (const x of v) add(x)
    else out.push(v)
  }
  for (const v of values) add(v)
  return out
}

/** A finite number or #NUM!/#DIV/0!: results never leak NaN or Infinity into a cell. */
export function finite(n: number, what = 'the result'): number {
  if (Number.isNaN(n)) return fail('NUM', `${what} is not a number`)
  if (!Number.isFinite(n)) return fail('NUM', `${what} is too large`)
  return n
}

/**
 * Spreadsheet comparison: -1, 0 or 1. Numbers compare numerically (a numeric text counts as a
 * number), two dates as instants, texts case-insensitively, blank as 0 or "" (like its partner);
 * across kinds numbers < texts < booleans, as in Excel.
 */
export function compare(aIn: Value, bIn: Value): number {
  let a = scalar(aIn)
  let b = scalar(bIn)
  if (a === null) a = typeof b === 'number' ? 0 : typeof b === 'boolean' ? false : ''
  if (b === null) b = typeof a === 'number' ? 0 : typeof a === 'boolean' ? false : ''
  if (typeof a === 'number' && typeof b === 'string' && parseNumber(b) !== undefined) b = parseNumber(b) as number
  if (typeof b === 'number' && typeof a === 'string' && parseNumber(a) !== undefined) a = parseNumber(a) as number
  if (typeof a === 'string' && typeof b === 'string') {
    const da = parseDate(a)
    const db = da ? parseDate(b) : null
    if (da && db) return Math.sign(da.ms - db.ms)
    const x = a.toLowerCase()
    const y = b.toLowerCase()
    return x < y ? -1 : x > y ? 1 : 0
  }
  if (typeof a === typeof b && (typeof a === 'number' || typeof a === 'boolean')) {
    const x = Number(a)
    const y = Number(b)
    return x < y ? -1 : x > y ? 1 : 0
  }
  if (Array.isArray(a) || Array.isArray(b))
    return fail('VALUE', 'cannot compare a list of several values; use CONTAINS or COUNTIF')
  return rank(a) - rank(b)
}

const rank = (v: Value) => (typeof v === 'number' ? 0 : typeof v === 'string' ? 1 : typeof v === 'boolean' ? 2 : 3)
