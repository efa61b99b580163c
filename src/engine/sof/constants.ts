import type { ViewConstant, ViewIssue } from './view-definition.ts'

/**
 * View constants (`constant: [{ name, value[x] }]`, referenced as `%name`). They are written into
 * each expression as FHIRPath literals before it compiles, rather than passed as environment
 * variables: a variable reaches the engine as a plain JSON value, so `birthDate = %bd` would compare
 * a FHIR date with a string and be false, while the literal `@1978-03-12` is a Date.
 */

/** How each `value[x]` type is checked and written as a literal. */
const TYPES: Record<string, { check: (v: unknown) => boolean; literal: (v: never) => string; expects: string }> = {
  Base64Binary: text(/^[A-Za-z0-9+/=\s]*$/),
  Canonical: text(),
  Code: text(/^\S+( \S+)*$/),
  Id: text(/^[A-Za-z0-9\-.]{1,64}$/),
  Oid: text(/^urn:oid:[0-2](\.(0|[1-9]\d*))+$/),
  String: text(),
  Uri: text(),
  Url: text(),
  Uuid: text(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  Markdown: text(),
  Boolean: { check: (v) => typeof v === 'boolean', literal: (v: boolean) => String(v), expects: 'a boolean' },
  Decimal: { check: (v) => typeof v === 'number' && Number.isFinite(v), literal: decimalLiteral, expects: 'a number' },
  Integer: integer(-2147483648),
  Integer64: integer(Number.MIN_SAFE_INTEGER),
  PositiveInt: integer(1),
  UnsignedInt: integer(0),
  Date: temporal(/^\d{4}(-\d{2}(-\d{2})?)?$/, (v) => `@${v}`, 'a FHIR date (YYYY, YYYY-MM or YYYY-MM-DD)'),
  DateTime: temporal(
    /^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?$/,
    // A dateTime without a time part is still a DateTime: `@2016-11-12T`, not the Date `@2016-11-12`.
    (v) => (v.includes('T') ? `@${v}` : `@${v}T`),
    'a FHIR dateTime',
  ),
  Instant: temporal(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/,
    (v) => `@${v}`,
    'a FHIR instant (a full date-time with a time zone)',
  ),
  Time: temporal(/^\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/, (v) => `@T${v}`, 'a FHIR time (hh:mm:ss)'),
}

/** Names the engine or the specification defines itself: never a view constant. */
const BUILT_IN = new Set(['rowIndex', 'resource', 'rootResource', 'context', 'ucum', 'sct', 'loinc', 'factory', 'terminologies'])

const NAME = /^[A-Za-z][A-Za-z0-9_]*$/

/** The constants as literals by name, with the problems of each (`constant[i]…`). */
export function constantLiterals(constants: unknown, issues: ViewIssue[]): Map<string, string> {
  const literals = new Map<string, string>()
  if (constants === undefined) return literals
  if (!Array.isArray(constants)) {
    issues.push({ path: 'constant', message: 'must be an array' })
    return literals
  }
  constants.forEach((raw: unknown, i) => {
    const at = `constant[${i}]`
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      issues.push({ path: at, message: 'must be an object { name, value[x] }' })
      return
    }
    const constant = raw as ViewConstant
    const values = Object.keys(constant).filter((k) => k.startsWith('value'))
    for (const key of Object.keys(constant)) {
      if (key !== 'name' && !key.startsWith('value') && key !== 'extension' && key !== 'id') {
        issues.push({ path: `${at}.${key}`, message: 'unknown key' })
      }
    }
    if (typeof constant.name !== 'string' || !NAME.test(constant.name)) {
      issues.push({ path: `${at}.name`, message: 'required: a name of letters, digits and _ starting with a letter' })
      return
    }
    if (BUILT_IN.has(constant.name)) issues.push({ path: `${at}.name`, message: `%${constant.name} is reserved` })
    if (literals.has(constant.name)) issues.push({ path: `${at}.name`, message: `duplicate constant ${constant.name}` })
    if (values.length !== 1) {
      issues.push({ path: at, message: 'needs exactly one value[x] (valueString, valueInteger, valueDate, …)' })
      return
    }
    const key = values[0]
    const type = TYPES[key.slice('value'.length)]
    if (!type) {
      issues.push({ path: `${at}.${key}`, message: `${key} is not a constant type` })
      return
    }
    if (!type.check(constant[key])) {
      issues.push({ path: `${at}.${key}`, message: `must be ${type.expects}` })
      return
    }
    literals.set(constant.name, type.literal(constant[key] as never))
  })
  return literals
}

/**
 * The expression with every view constant replaced by its literal; unknown `%names` (neither a
 * constant nor built in) are reported. String literals and comments are left alone.
 */
export function withConstants(expression: string, literals: Map<string, string>, at: string, issues: ViewIssue[]): string {
  let out = ''
  let i = 0
  while (i < expression.length) {
    const ch = expression[i]
    if (ch === "'" || ch === '`') {
      const end = closing(expression, i, ch)
      out += expression.slice(i, end)
      i = end
    } else if (ch === '/' && expression[i + 1] === '/') {
      const end = expression.indexOf('\n', i)
      out += expression.slice(i, end < 0 ? undefined : end)
      i = end < 0 ? expression.length : end
    } else if (ch === '/' && expression[i + 1] === '*') {
      const end = expression.indexOf('*/', i + 2)
      const stop = end < 0 ? expression.length : end + 2
      out += expression.slice(i, stop)
      i = stop
    } else if (ch === '%') {
      const delimited = expression[i + 1] === '`'
      const end = delimited ? closing(expression, i + 1, '`') : scanName(expression, i + 1)
      const name = delimited ? expression.slice(i + 2, end - 1) : expression.slice(i + 1, end)
      const literal = literals.get(name)
      if (literal !== undefined) out += literal
      else {
        if (name !== '' && !BUILT_IN.has(name) && !/^(vs|ext)-/.test(name)) {
          issues.push({ path: at, message: `%${name} is not a constant of this view` })
        }
        out += expression.slice(i, end)
      }
      i = end
    } else {
      out += ch
      i++
    }
  }
  return out
}

/** Whether an expression (constants substituted) reads `%name`. */
export const usesVariable = (expression: string, name: string) => new RegExp(`%\`?${name}\\b`).test(expression)

// --- Internal helpers ---

function text(pattern?: RegExp) {
  return {
    check: (v: unknown) => typeof v === 'string' && (!pattern || pattern.test(v)),
    literal: (v: string) =>
      `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t')}'`,
    expects: pattern ? `a string of the FHIR format ${pattern}` : 'a string',
  }
}

function integer(min: number) {
  return {
    check: (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= min,
    literal: (v: number) => String(v),
    expects: min === 1 ? 'a positive integer' : min === 0 ? 'an integer ≥ 0' : 'an integer',
  }
}

function temporal(pattern: RegExp, literal: (v: string) => string, expects: string) {
  return { check: (v: unknown) => typeof v === 'string' && pattern.test(v), literal, expects }
}

/** A decimal literal: FHIRPath has no exponent notation, so 1e-7 is written out. */
function decimalLiteral(v: number): string {
  const plain = String(v)
  if (!/e/i.test(plain)) return plain
  return v.toFixed(20).replace(/0+$/, '').replace(/\.$/, '.0')
}

function closing(expression: string, start: number, quote: string): number {
  let i = start + 1
  while (i < expression.length && expression[i] !== quote) i += expression[i] === '\\' ? 2 : 1
  return Math.min(i + 1, expression.length)
}

function scanName(expression: string, start: number): number {
  let i = start
  while (i < expression.length && /[A-Za-z0-9_]/.test(expression[i])) i++
  return i
}
