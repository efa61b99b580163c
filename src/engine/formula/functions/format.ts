/**
 * TEXT(value, format) formats: Excel number formats (0 # , . % E+00, "literal", \c, a second
 * section for negatives) and Excel date formats (yyyy yy mmmm mmm mm m dddd ddd dd d hh h mm ss
 * AM/PM), rendered in UTC.
 */

import { formatWith } from '../dates.ts'
import { fail } from '../errors.ts'
import { formatNumber } from '../values.ts'
import { roundTo } from './numbers.ts'

const CORE = /[0#?][0#?,]*(?:\.[0#?]*)?(?:[eE][+-]0+)?|\.[0#?]+(?:[eE][+-]0+)?/
const literal = (s: string) => s.replace(/"([^"]*)"|\\(.)/g, (_, q, c) => q ?? c)

/** `1234.5` with `#,##0.00` → `1,234.50`; `0.256` with `0.0%` → `25.6%`. */
export function formatNumberPattern(n: number, format: string): string {
  if (format.trim() === '' || format.trim().toLowerCase() === 'general') return formatNumber(n)
  const sections = format.split(';')
  const negativeSection = n < 0 && sections.length > 1
  const pattern = negativeSection ? sections[1] : n === 0 && sections.length > 2 ? sections[2] : sections[0]
  const m = CORE.exec(pattern)
  if (!m) return literal(pattern)
  const prefix = literal(pattern.slice(0, m.index))
  const suffix = literal(pattern.slice(m.index + m[0].length))
  const percents = (prefix + suffix).split('%').length - 1
  let value = Math.abs(n) * 100 ** percents
  const [mantissaPart, exponentPart] = m[0].split(/[eE]/)
  const [intPart, fracPart = ''] = mantissaPart.split('.')
  const decimals = fracPart.length
  const minDecimals = fracPart.replace(/[#?]/g, '').length
  const minInt = intPart.replace(/[#?,]/g, '').length
  let exponent = ''
  if (exponentPart !== undefined) {
    const e = value === 0 ? 0 : Math.floor(Math.log10(value))
    value /= 10 ** e
    const digits = exponentPart.length - 1
    exponent = `E${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(digits, '0')}`
  }
  let [int, frac = ''] = roundTo(value, decimals, 'half').toFixed(decimals).split('.')
  while (frac.length > minDecimals && frac.endsWith('0')) frac = frac.slice(0, -1)
  if (int === '0' && minInt === 0) int = ''
  int = int.padStart(minInt, '0')
  if (intPart.includes(',')) int = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  const sign = n < 0 && !negativeSection && Number(`${int}.${frac || 0}`) !== 0 ? '-' : ''
  return `${sign}${prefix}${int}${frac ? `.${frac}` : ''}${exponent}${suffix}`
}

const DATE_TOKENS = /yyyy|yy|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|ss|s|am\/pm|a\/p|"[^"]*"/gi

/** True when the format has date or time codes (y, d, h, s). */
export const isDateFormat = (format: string) => /[ydhs]/i.test(format.replace(/"[^"]*"/g, ''))

/** Excel date format → the moment-style layout of DATETIME_FORMAT, then rendered. */
export function formatDatePattern(ms: number, format: string): string {
  const tokens = [...format.matchAll(DATE_TOKENS)]
  let out = ''
  let last = 0
  tokens.forEach((t, i) => {
    out += `[${format.slice(last, t.index)}]`
    last = (t.index as number) + t[0].length
    const raw = t[0]
    const lower = raw.toLowerCase()
    const prev = tokens[i - 1]?.[0].toLowerCase() ?? ''
    const next = tokens[i + 1]?.[0].toLowerCase() ?? ''
    const minutes = (lower === 'mm' || lower === 'm') && (prev.startsWith('h') || next.startsWith('s'))
    const map: Record<string, string> = {
      yyyy: 'YYYY',
      yy: 'YY',
      mmmm: 'MMMM',
      mmm: 'MMM',
      mm: minutes ? 'mm' : 'MM',
      m: minutes ? 'mm' : 'M',
      dddd: 'dddd',
      ddd: 'ddd',
      dd: 'DD',
      d: 'D',
      hh: /am\/pm|a\/p/i.test(format) ? 'hh' : 'HH',
      h: /am\/pm|a\/p/i.test(format) ? 'h' : 'H',
      ss: 'ss',
      s: 'ss',
      'am/pm': 'A',
      'a/p': 'A',
    }
    out += raw.startsWith('"') ? `[${raw.slice(1, -1)}]` : (map[lower] ?? fail('VALUE', `unknown date code ${raw}`))
  })
  out += `[${format.slice(last)}]`
  return formatWith(ms, out.replace(/\[\]/g, ''))
}
