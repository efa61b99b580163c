/**
 * Turning extracted source values into cell values of a column's `type` (CONTRACT: Columns — known
 * types drive typing; others read as text). Cells hold JSON values exactly as sources gave them
 * (docs/views-and-rows.md "Exact values"): `""`, `[]`, a one-element array, `0` and `false` are
 * values, never null. Typing converts scalars only (a CSV's "42" in a number column is 42); it never
 * changes a value's shape. A typed column converts text, and an empty text has no number, boolean or
 * date in it: `""` in a number, boolean, date or datetime column is null (issue 20), while text, list
 * and json columns keep it.
 */

/** Every kind a column's cells can be read as (a column answer's `kind`). */
export const CELL_KINDS = ['text', 'number', 'boolean', 'date', 'datetime', 'list', 'json'] as const
export type CellKind = (typeof CELL_KINDS)[number]

/**
 * The column types the service knows, and the kind each is read as (CONTRACT: Columns — the known
 * types drive typing). `type` stays free: any other name reads as text, and a column's `kind` says
 * so. Names are matched case-insensitively. The OpenAPI description of `type` and the table in
 * docs/views-and-rows.md are generated from / checked against this list.
 */
export const KNOWN_TYPES: Readonly<Record<string, CellKind>> = {
  text: 'text',
  string: 'text',
  email: 'text',
  url: 'text',
  select: 'text',
  user: 'text',
  file: 'text',
  custom: 'text',
  number: 'number',
  currency: 'number',
  percentage: 'number',
  integer: 'number',
  decimal: 'number',
  boolean: 'boolean',
  date: 'date',
  datetime: 'datetime',
  multi_select: 'list',
  json: 'json',
}

/** The kind of value a column type holds; every unknown type is text. */
export const kindOf = (type: string): CellKind =>
  Object.hasOwn(KNOWN_TYPES, type.toLowerCase()) ? KNOWN_TYPES[type.toLowerCase()] : 'text'

/** Thrown for a value that cannot be read as the column's type; the cell stays blank. */
export class CoercionError extends Error {
  constructor(
    readonly code: 'VALUE',
    message: string,
  ) {
    super(message)
  }
}

/**
 * The cell of a FHIRPath column from the collection its expression gave, by SQL-on-FHIR column
 * rules: empty → null, one value → that value, `collection` → always an array (empty too). Several
 * values without `collection` give the array rather than dropping any (SQL-on-FHIR would refuse
 * them). A `multi_select` column holds a list, so it reads as a collection once it has values.
 */
export function cellFromCollection(values: unknown[], type: string, collection = false): unknown {
  const kind = kindOf(type)
  const present = values.filter((v) => v !== null && v !== undefined)
  if (collection || (kind === 'list' && present.length > 0)) return present.map((v) => coerce(v, kind))
  if (present.length === 0) return null
  if (present.length === 1) return coerce(present[0], kind)
  return present.map((v) => coerce(v, kind))
}

/**
 * The cell of a source-field column (or an imported value): the JSON value exactly as the record
 * holds it, missing → null; a scalar, and each element of an array, typed as the column's kind;
 * objects stay objects.
 */
export function cellFromValue(value: unknown, type: string): unknown {
  if (value === undefined || value === null) return null
  const kind = kindOf(type)
  return Array.isArray(value) ? value.map((v) => coerce(v, kind)) : coerce(value, kind)
}

/** The kinds that convert text to another type: an empty text has no value in them. */
const CONVERTING = new Set<CellKind>(['number', 'boolean', 'date', 'datetime'])

/**
 * A single value as `kind`; throws CoercionError when it cannot be read so. `null` and arrays are
 * kept as they are; `""` is null in a kind that converts text (number, boolean, date, datetime) and
 * kept in text, list and json cells; `json` cells hold any structure and text cells keep objects as
 * objects. Scalars are converted, and so are the objects that stand for one (a FHIR Quantity in a
 * number column is its value, a Date in a date column its ISO text).
 */
export function coerce(value: unknown, kind: CellKind): unknown {
  if (value === null || value === undefined) return null
  if (value === '') return CONVERTING.has(kind) ? null : value
  if (Array.isArray(value) || kind === 'json') return value
  switch (kind) {
    case 'number':
      return toNumber(value)
    case 'boolean':
      return toBoolean(value)
    case 'date':
    case 'datetime':
      return toDate(value, kind)
    default:
      return typeof value === 'object' ? value : String(value)
  }
}

// --- Internal helpers ---

function toNumber(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value
  if (typeof value === 'boolean') return value ? 1 : 0
  if (typeof value === 'string') {
    const s = value.trim().replace(/,(?=\d{3}(\D|$))/g, '')
    if (/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?%?$/.test(s)) {
      const n = Number(s.replace(/%$/, ''))
      return s.endsWith('%') ? n / 100 : n
    }
  }
  if (value && typeof value === 'object' && 'value' in value) return toNumber((value as { value: unknown }).value)
  throw new CoercionError('VALUE', `${preview(value)} is not a number`)
}

function toBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value
  if (typeof value === 'number') return value !== 0
  if (typeof value === 'string') {
    const s = value.trim().toLowerCase()
    if (['true', 'yes', 'y', '1', 't'].includes(s)) return true
    if (['false', 'no', 'n', '0', 'f'].includes(s)) return false
  }
  throw new CoercionError('VALUE', `${preview(value)} is not a boolean`)
}

const DATE = /^\d{4}(-\d{2}(-\d{2})?)?$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/

/** FHIR dates stay as written (partial dates too); date-times become UTC ISO instants. */
function toDate(value: unknown, kind: 'date' | 'datetime'): string {
  if (value instanceof Date && !Number.isNaN(value.getTime()))
    return kind === 'date' ? value.toISOString().slice(0, 10) : value.toISOString()
  if (typeof value === 'string') {
    const s = value.trim()
    if (DATE.test(s)) return s
    if (DATE_TIME.test(s)) {
      const d = new Date(/[zZ]|[+-]\d{2}:?\d{2}$/.test(s) ? s : `${s.replace(' ', 'T')}Z`)
      if (!Number.isNaN(d.getTime())) return kind === 'date' ? s.slice(0, 10) : d.toISOString()
    }
  }
  throw new CoercionError('VALUE', `${preview(value)} is not a date`)
}

const preview = (v: unknown) => {
  const s = typeof v === 'string' ? `"${v}"` : JSON.stringify(v)
  return s && s.length > 40 ? `${s.slice(0, 37)}…` : String(s)
}
