/**
 * Recursive-descent parser of formulas (FORMULAS.md "Syntax"). Precedence, tightest first: `^`
 * (right-associative; its exponent may carry a sign, `2^-1`), unary `-`/`+` (so `-2^2` is -4),
 * `* / %`, `+ -`, `&`, comparisons. Binary operators other than `^` associate to the left.
 */
import type { BinaryOp, Node } from './ast.ts'
import type { ExpressionError } from './errors.ts'
import { lex, type Token } from './lexer.ts'

export interface ParseResult {
  /** The tree, or null when the formula does not parse. */
  ast: Node | null
  tokens: Token[]
  /** Lexer errors plus the first parser error, ordered by position. */
  errors: ExpressionError[]
}

const COMPARISONS = new Set(['=', '!=', '<>', '<', '<=', '>', '>='])
/** Deepest nesting of parentheses, calls and signs: deeper formulas are refused, not a stack overflow. */
export const MAX_DEPTH = 100
/** Longest operator chain (`1+1+…`): the tree's height bounds the recursion of checks and evaluation. */
export const MAX_HEIGHT = 1000

class ParseError extends Error {
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(message)
  }
}

/** Parses a formula; never throws. */
export function parse(source: string): ParseResult {
  const { tokens, errors } = lex(source)
  if (source.trim() === '') {
    return { ast: null, tokens, errors: [{ type: 'syntax', message: 'Formula is empty', position: 0 }] }
  }
  let ast: Node | null = null
  try {
    ast = new Parser(tokens).parseFormula()
  } catch (error) {
    if (!(error instanceof ParseError)) throw error
    errors.push({ type: 'syntax', message: error.message, position: error.position })
  }
  errors.sort((a, b) => (a.position ?? 0) - (b.position ?? 0))
  return { ast: errors.length > 0 ? null : ast, tokens, errors }
}

const describe = (t: Token) => (t.kind === 'eof' ? 'end of formula' : t.kind === 'text' ? 'text' : `"${t.value}"`)

class Parser {
  private i = 0
  private depth = 0
  private readonly heights = new WeakMap<Node, number>()
  constructor(private readonly tokens: Token[]) {}

  parseFormula(): Node {
    const node = this.comparison()
    const next = this.peek()
    if (next.kind === ')') throw new ParseError('Unexpected ) without a matching (', next.pos)
    if (next.kind !== 'eof') throw new ParseError(`Unexpected ${describe(next)}: expected an operator`, next.pos)
    return node
  }

  /** Runs `f` one nesting level deeper. */
  private nested<T>(at: Token, f: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new ParseError(`Formula nests deeper than ${MAX_DEPTH} levels`, at.pos)
    const out = f()
    this.depth--
    return out
  }

  private peek(): Token {
    return this.tokens[this.i]
  }

  private next(): Token {
    return this.tokens[this.i++]
  }

  private isOp(...ops: string[]): boolean {
    const t = this.peek()
    return t.kind === 'op' && ops.includes(t.value)
  }

  private binary(op: Token, left: Node, right: Node): Node {
    const height = 1 + Math.max(this.heights.get(left) ?? 0, this.heights.get(right) ?? 0)
    if (height > MAX_HEIGHT) throw new ParseError(`Formula chains more than ${MAX_HEIGHT} operators`, op.pos)
    const node: Node = { kind: 'binary', op: op.value as BinaryOp, left, right, opPos: op.pos, pos: left.pos, end: right.end }
    this.heights.set(node, height)
    return node
  }

  private comparison(): Node {
    let left = this.concat()
    while (this.peek().kind === 'op' && COMPARISONS.has(this.peek().value)) {
      const op = this.next()
      left = this.binary(op, left, this.concat())
    }
    return left
  }

  private concat(): Node {
    let left = this.additive()
    while (this.isOp('&')) {
      const op = this.next()
      left = this.binary(op, left, this.additive())
    }
    return left
  }

  private additive(): Node {
    let left = this.multiplicative()
    while (this.isOp('+', '-')) {
      const op = this.next()
      left = this.binary(op, left, this.multiplicative())
    }
    return left
  }

  private multiplicative(): Node {
    let left = this.unary()
    while (this.isOp('*', '/', '%')) {
      const op = this.next()
      left = this.binary(op, left, this.unary())
    }
    return left
  }

  private unary(): Node {
    if (this.isOp('-', '+')) {
      const op = this.next()
      const operand = this.nested(op, () => this.unary())
      return { kind: 'unary', op: op.value as '-' | '+', operand, pos: op.pos, end: operand.end }
    }
    return this.power()
  }

  private power(): Node {
    const base = this.primary()
    if (!this.isOp('^')) return base
    const op = this.next()
    return this.binary(
      op,
      base,
      this.nested(op, () => this.unary()),
    )
  }

  private primary(): Node {
    const t = this.next()
    switch (t.kind) {
      case 'number':
        return { kind: 'number', value: Number(t.value), pos: t.pos, end: t.end }
      case 'text':
        return { kind: 'text', value: t.value, pos: t.pos, end: t.end }
      case 'ref':
        return { kind: 'ref', name: t.value, pos: t.pos, end: t.end }
      case 'ident':
        return this.identifier(t)
      case '(': {
        const inner = this.nested(t, () => this.comparison())
        this.close(t, ')')
        return inner
      }
      case 'eof':
        throw new ParseError('Unexpected end of formula: expected a value', t.pos)
      case ')':
        throw new ParseError('Unexpected ) : expected a value', t.pos)
      default:
        throw new ParseError(`Unexpected ${describe(t)}: expected a value`, t.pos)
    }
  }

  private identifier(t: Token): Node {
    if (this.peek().kind === '(') {
      const open = this.next()
      const args: Node[] = []
      if (this.peek().kind !== ')') {
        for (;;) {
          args.push(this.nested(open, () => this.comparison()))
          if (this.peek().kind !== ',') break
          this.next()
        }
      }
      const end = this.close(open, ', or )')
      return { kind: 'call', name: t.value.toUpperCase(), args, pos: t.pos, end }
    }
    const upper = t.value.toUpperCase()
    if (!t.dotted && (upper === 'TRUE' || upper === 'FALSE')) {
      return { kind: 'boolean', value: upper === 'TRUE', pos: t.pos, end: t.end }
    }
    if (t.dotted) return { kind: 'path', path: t.value, pos: t.pos, end: t.end }
    return { kind: 'word', name: t.value, pos: t.pos, end: t.end }
  }

  /** Consumes the `)` matching `open`; returns the offset after it. */
  private close(open: Token, expected: string): number {
    const t = this.peek()
    if (t.kind === ')') {
      this.next()
      return t.end
    }
    if (t.kind === 'eof') throw new ParseError('Unclosed (: missing )', open.pos)
    throw new ParseError(`Unexpected ${describe(t)}: expected ${expected}`, t.pos)
  }
}
