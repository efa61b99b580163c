/**
 * Static types of a formula (FORMULAS.md "Values and types"): each node's type is inferred from
 * literals, the referenced columns' declared types and the functions' signatures. Only a CERTAIN
 * mismatch is an error (a date or a list in arithmetic, a text literal that is no number where a
 * number is needed, a number where a date is needed); `any` and texts of unknown content pass and
 * are coerced at run time. Wrong argument counts are reported here too.
 */
import type { Node, ValueType } from './ast.ts'
import { lookupFunction } from './catalogue.ts'
import { parseDate } from './dates.ts'
import type { ExpressionError } from './errors.ts'
import { fhirPathProblem } from './source.ts'
import { parseNumber } from './values.ts'

const TYPE_NAMES: Record<string, ValueType> = {
  number: 'number',
  numeric: 'number',
  integer: 'number',
  int: 'number',
  decimal: 'number',
  float: 'number',
  double: 'number',
  currency: 'number',
  percent: 'number',
  text: 'text',
  string: 'text',
  boolean: 'boolean',
  bool: 'boolean',
  checkbox: 'boolean',
  date: 'date',
  datetime: 'date',
  'date-time': 'date',
  timestamp: 'date',
  instant: 'date',
  array: 'array',
  list: 'array',
}

/** The static type of a column's declared `type`/`dataType` (unknown names are `any`). */
export const columnValueType = (declared: string | null | undefined): ValueType =>
  TYPE_NAMES[(declared ?? '').trim().toLowerCase()] ?? 'any'

const ARITHMETIC = new Set(['^', '*', '/', '%', '+', '-'])
const BOOLEAN_WORDS = new Set(['true', 'false', 'yes', 'no', '1', '0', ''])

export class TypeChecker {
  readonly errors: ExpressionError[] = []

  constructor(
    private readonly source: string,
    private readonly typeOfColumn: (name: string) => ValueType,
    /** Whether FHIRPATH("…") arguments are parsed (by the FHIRPath engine, which must be loaded). */
    private readonly checkFhirPaths = true,
  ) {}

  infer(node: Node): ValueType {
    switch (node.kind) {
      case 'number':
        return 'number'
      case 'text':
        return 'text'
      case 'boolean':
        return 'boolean'
      case 'ref':
        return this.typeOfColumn(node.name)
      case 'path':
      case 'word':
        return 'any'
      case 'unary':
        this.numeric(node.operand, this.infer(node.operand), `unary ${node.op}`)
        return 'number'
      case 'binary': {
        const left = this.infer(node.left)
        const right = this.infer(node.right)
        if (ARITHMETIC.has(node.op)) {
          this.numeric(node.left, left, node.op)
          this.numeric(node.right, right, node.op)
          return 'number'
        }
        return node.op === '&' ? 'text' : 'boolean'
      }
      case 'call':
        return this.call(node)
    }
  }

  private text(node: Node): string {
    return this.source.slice(node.pos, node.end)
  }

  private error(node: Node, message: string, suggestion?: string) {
    this.errors.push({ type: 'type', message, position: node.pos, ...(suggestion ? { suggestion } : {}) })
  }

  private numeric(node: Node, type: ValueType, op: string) {
    if (type === 'date') {
      this.error(
        node,
        `${this.text(node)} is a date: ${op} needs numbers`,
        'use DATEADD(date, n, unit) or DATEDIF(start, end, unit)',
      )
    } else if (type === 'array') {
      this.error(node, `${this.text(node)} is a list: ${op} needs numbers`, 'use SUM, FIRST or INDEX to get a number')
    } else if (node.kind === 'text' && parseNumber(node.value) === undefined && node.value.trim() !== '') {
      this.error(node, `"${node.value}" is not a number: ${op} needs numbers`)
    }
  }

  private call(node: Extract<Node, { kind: 'call' }>): ValueType {
    const types = node.args.map((a) => this.infer(a))
    const def = lookupFunction(node.name)
    if (!def) return 'any'
    const n = node.args.length
    if (n < def.min || n > def.max) {
      const range =
        def.max === def.min
          ? `${def.min}`
          : def.max === Number.POSITIVE_INFINITY
            ? `at least ${def.min}`
            : `${def.min} to ${def.max}`
      this.errors.push({
        type: 'syntax',
        message: `${def.name} takes ${range} argument${/(^| )1$/.test(range) ? '' : 's'}, got ${n}`,
        position: node.pos,
      })
      return 'any'
    }
    node.args.forEach((arg, i) => {
      const param = def.params[Math.min(i, def.params.length - 1)]
      if (!param.type.split('|').some((t) => this.fits(t, types[i], arg))) {
        this.error(
          arg,
          `${def.name} expects ${param.type.split('|').map(article).join(' or ')} as ${param.name}, but ${this.text(arg)} is ${article(types[i])}`,
        )
      }
    })
    if (this.checkFhirPaths && def.name === 'FHIRPATH' && node.args[0]?.kind === 'text') {
      const problem = fhirPathProblem(node.args[0].value)
      if (problem) this.errors.push({ type: 'syntax', message: `Invalid FHIRPath: ${problem}`, position: node.args[0].pos })
    }
    return typeof def.returns === 'function' ? def.returns(types) : def.returns
  }

  /** Whether an argument of type `t` can (possibly) be a `param`. */
  private fits(param: string, t: ValueType, node: Node): boolean {
    if (t === 'any' || t === 'blank' || param === 'any' || param === 'text' || param === 'array') return true
    const literal = node.kind === 'text' ? node.value : undefined
    switch (param) {
      case 'number':
        return (
          t === 'number' ||
          t === 'boolean' ||
          (t === 'text' && (literal === undefined || literal.trim() === '' || parseNumber(literal) !== undefined))
        )
      case 'boolean':
        return (
          t === 'number' ||
          t === 'boolean' ||
          (t === 'text' && (literal === undefined || BOOLEAN_WORDS.has(literal.trim().toLowerCase())))
        )
      case 'date':
        return t === 'date' || (t === 'text' && (literal === undefined || literal.trim() === '' || parseDate(literal) !== null))
      default:
        return true
    }
  }
}

const article = (t: string) => (t === 'array' ? 'a list' : t === 'text' ? 'a text' : `a ${t}`)
