/**
 * Dates of formulas: ISO 8601 texts, computed in UTC (a date without an offset is read as UTC).
 * A date-only value stays date-only through date arithmetic; a date-time keeps its time.
 */

export interface DateValue {
  /** Epoch milliseconds, UTC. */
  ms: number
  hasTime: boolean
}

const ISO = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/
export const DAY_MS = 86_400_000

/** `2024-01-31`, `2024-01`, `2024`, `2024-01-31T10:20:30.5+01:00`; null when not a valid date. */
export function parseDate(text: string): DateValue | null {
  const m = ISO.exec(text.trim())
  if (!m) return null
  const [, y, mo = '01', d = '01', h, mi, s = '0', frac = '0', zone] = m
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month - 1)) return null
  if (h !== undefined && (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59)) return null
  let ms = Date.UTC(year, month - 1, day, Number(h ?? 0), Number(mi ?? 0), Number(s), Number(frac.padEnd(3, '0').slice(0, 3)))
  if (zone && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1
    const digits = zone.slice(1).replace(':', '')
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000
  }
  if (year < 100) ms = new Date(ms).setUTCFullYear(year)
  return { ms, hasTime: h !== undefined }
}

export const isIsoDate = (text: string) => parseDate(text) !== null

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

/** `YYYY-MM-DD` for date-only values, the full ISO instant (`…T…Z`) otherwise. */
export function formatDate(ms: number, hasTime: boolean): string {
  const d = new Date(ms)
  if (!hasTime) return `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  return d.toISOString()
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Days of a month of the UTC (proleptic Gregorian) calendar; `monthIndex` 0–11, or any month counted from `year`'s January. */
export function daysInMonth(year: number, monthIndex: number): number {
  if (!Number.isInteger(monthIndex) || monthIndex < 0 || monthIndex > 11) {
    return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate()
  }
  if (monthIndex !== 1) return MONTH_DAYS[monthIndex]
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
}

/** Adds whole months, clamping the day to the target month's end (Excel EDATE). */
export function addMonths(ms: number, months: number): number {
  const d = new Date(ms)
  const y = d.getUTCFullYear()
  const target = d.getUTCMonth() + Math.trunc(months)
  const ty = y + Math.floor(target / 12)
  const tm = ((target % 12) + 12) % 12
  const day = Math.min(d.getUTCDate(), daysInMonth(ty, tm))
  const out = new Date(ms)
  out.setUTCFullYear(ty, tm, day)
  return out.getTime()
}

/**
 * Whole months completed from `a` to `b` (a ≤ b) as Excel DATEDIF "M" counts them: a month is
 * complete when the day of month (and time) of `b` has reached that of `a`, so 31 Jan → 29 Feb is 0.
 */
export function monthsBetween(a: number, b: number): number {
  const da = new Date(a)
  const db = new Date(b)
  const months = (db.getUTCFullYear() - da.getUTCFullYear()) * 12 + db.getUTCMonth() - da.getUTCMonth()
  return intoMonth(db) < intoMonth(da) ? months - 1 : months
}

/** Milliseconds from the start of a date's UTC month to the date. */
function intoMonth(d: Date): number {
  return d.getTime() - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

/** Start of the UTC day. */
export const startOfDay = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
]
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
const TOKENS = /YYYY|YY|MMMM|MMM|MM|M|DD|D|dddd|ddd|HH|H|hh|h|mm|ss|A|a|\[[^\]]*\]/g

/**
 * Formats with moment-style tokens: YYYY YY MMMM MMM MM M DD D dddd ddd HH H hh h mm ss A a;
 * `[text]` is literal.
 */
export function formatWith(ms: number, format: string): string {
  const d = new Date(ms)
  const h = d.getUTCHours()
  const parts: Record<string, () => string> = {
    YYYY: () => pad(d.getUTCFullYear(), 4),
    YY: () => pad(d.getUTCFullYear() % 100),
    MMMM: () => MONTHS[d.getUTCMonth()],
    MMM: () => MONTHS[d.getUTCMonth()].slice(0, 3),
    MM: () => pad(d.getUTCMonth() + 1),
    M: () => String(d.getUTCMonth() + 1),
    DD: () => pad(d.getUTCDate()),
    D: () => String(d.getUTCDate()),
    dddd: () => DAYS[d.getUTCDay()],
    ddd: () => DAYS[d.getUTCDay()].slice(0, 3),
    HH: () => pad(h),
    H: () => String(h),
    hh: () => pad(h % 12 || 12),
    h: () => String(h % 12 || 12),
    mm: () => pad(d.getUTCMinutes()),
    ss: () => pad(d.getUTCSeconds()),
    A: () => (h < 12 ? 'AM' : 'PM'),
    a: () => (h < 12 ? 'am' : 'pm'),
  }
  return format.replace(TOKENS, (t) => (t.startsWith('[') ? t.slice(1, -1) : parts[t]()))
}

/** Parses text laid out as `format` (tokens YYYY MM M DD D HH H mm ss); null when it does not fit. */
export function parseWith(text: string, format: string): DateValue | null {
  const fields: string[] = []
  const escaped = format.replace(/[.*+?^${}()|\\]/g, '\\$&')
  const pattern = escaped.replace(/YYYY|MM|M|DD|D|HH|H|mm|ss/g, (t) => {
    fields.push(t)
    return t === 'YYYY' ? '(\\d{4})' : t.length === 2 ? '(\\d{2})' : '(\\d{1,2})'
  })
  const m = new RegExp(`^${pattern}$`).exec(text.trim())
  if (!m) return null
  const get = (...names: string[]) => {
    const k = fields.findIndex((f) => names.includes(f))
    return k < 0 ? undefined : Number(m[k + 1])
  }
  const y = get('YYYY') ?? 1970
  const mo = get('MM', 'M') ?? 1
  const d = get('DD', 'D') ?? 1
  const h = get('HH', 'H')
  const iso = `${pad(y, 4)}-${pad(mo)}-${pad(d)}${h === undefined ? '' : `T${pad(h)}:${pad(get('mm') ?? 0)}:${pad(get('ss') ?? 0)}Z`}`
  return parseDate(iso)
}
