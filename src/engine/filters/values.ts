import type { CellKind } from '../cells/coerce.ts'
import { isDateKind } from './kinds.ts'
import type { FilterOperator } from './operators.ts'

/**
 * Filter values read as the column's kind, so the database compares like with like: numbers as
 * numbers, booleans as 1/0 (how SQLite reads JSON true/false), dates as ISO text, texts as texts.
 * A date-only value (`2024-03-01`, or partial `2024-03`, `2024`) compares with the cell's date part,
 * so it matches the whole day on a date-time column; a date-time value compares as a UTC instant.
 */

/** One value to compare cells with; `day` marks a date-only value compared with the cell's date part. */
export interface Comparand {
  value: string | number
  day?: boolean
}

export type Coerced = { ok: true; value: Comparand } | { ok: false; message: string }

const PATTERN_OPERATORS = new Set<FilterOperator>(['contains', 'notContains', 'startsWith', 'endsWith'])
const DATE_ONLY = /^\d{4}(-\d{2}(-\d{2})?)?$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i

/** A single filter value as `kind` for `operator`, or why it cannot be read so. */
export function comparand(raw: unknown, kind: CellKind, operator: FilterOperator): Coerced {
  if (raw === null || raw === undefined) return fail('a value is required (use isNull or isEmpty for blanks)')
  if (typeof raw === 'object') return fail(`${preview(raw)} is not a single value`)
  if (PATTERN_OPERATORS.has(operator)) return ok({ value: String(raw) })
  if (kind === 'number') return number(raw)
  if (kind === 'boolean') return boolean(raw)
  if (isDateKind(kind)) return date(raw, kind)
  return ok({ value: String(raw) })
}

/** The `[low, high]` pair of between/notBetween. */
export function rangeOf(
  raw: unknown,
  kind: CellKind,
  operator: FilterOperator,
): { ok: true; value: [Comparand, Comparand] } | Failed {
  if (!Array.isArray(raw) || raw.length !== 2) return fail(`${operator} takes a [low, high] pair`)
  const low = comparand(raw[0], kind, operator)
  if (!low.ok) return fail(`low bound: ${low.message}`)
  const high = comparand(raw[1], kind, operator)
  if (!high.ok) return fail(`high bound: ${high.message}`)
  return { ok: true, value: [low.value, high.value] }
}

/** The list of in/notIn (at most `max` values). */
export function listOf(
  raw: unknown,
  kind: CellKind,
  operator: FilterOperator,
  max = 1000,
): { ok: true; value: Comparand[] } | Failed {
  if (!Array.isArray(raw)) return fail(`${operator} takes a list of values`)
  if (raw.length > max) return fail(`${operator} takes at most ${max} values`)
  const out: Comparand[] = []
  for (const [i, item] of raw.entries()) {
    const c = comparand(item, kind, operator)
    if (!c.ok) return fail(`item ${i}: ${c.message}`)
    out.push(c.value)
  }
  return { ok: true, value: out }
}

// --- Internal helpers ---

type Failed = { ok: false; message: string }

const ok = (value: Comparand): Coerced => ({ ok: true, value })
const fail = (message: string): Failed => ({ ok: false, message })

function number(raw: unknown): Coerced {
  if (typeof raw === 'number' && Number.isFinite(raw)) return ok({ value: raw })
  if (typeof raw === 'string' && raw.trim() !== '' && Number.isFinite(Number(raw.trim())))
    return ok({ value: Number(raw.trim()) })
  return fail(`${preview(raw)} is not a number`)
}

function boolean(raw: unknown): Coerced {
  if (raw === true || raw === 1) return ok({ value: 1 })
  if (raw === false || raw === 0) return ok({ value: 0 })
  if (typeof raw === 'string') {
    const s = raw.trim().toLowerCase()
    if (s === 'true') return ok({ value: 1 })
    if (s === 'false') return ok({ value: 0 })
  }
  return fail(`${preview(raw)} is not a boolean (true or false)`)
}

function date(raw: unknown, kind: CellKind): Coerced {
  if (typeof raw !== 'string') return fail(`${preview(raw)} is not a date (ISO 8601 text)`)
  const s = raw.trim()
  if (DATE_ONLY.test(s)) return ok({ value: s, day: true })
  if (DATE_TIME.test(s)) {
    const d = new Date(/[zZ]|[+-]\d{2}:?\d{2}$/.test(s) ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`)
    if (!Number.isNaN(d.getTime())) {
      const iso = d.toISOString()
      return ok(kind === 'date' ? { value: iso.slice(0, 10), day: true } : { value: iso })
    }
  }
  return fail(`${preview(raw)} is not a date (ISO 8601 text)`)
}

function preview(v: unknown): string {
  const s = typeof v === 'string' ? `"${v}"` : (JSON.stringify(v) ?? String(v))
  return s.length > 40 ? `${s.slice(0, 37)}…` : s
}
