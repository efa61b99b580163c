/**
 * Tokens of a formula (FORMULAS.md "Syntax"). The lexer never throws: problems (unterminated
 * references or text, stray characters) become syntax errors and lexing goes on, so every error of
 * a formula is reported at once.
 */
import type { ExpressionError } from './errors.ts'

export type TokenKind = 'number' | 'text' | 'ref' | 'ident' | 'op' | '(' | ')' | ',' | 'eof'

export interface Token {
  kind: TokenKind
  /** Number text, decoded text, reference name, identifier chain or operator. */
  value: string
  pos: number
  end: number
  /** ident: the chain has a dot (`Patient.birthDate`). */
  dotted?: boolean
  /** ref/text: the closing `}` or quote is missing. */
  broken?: boolean
}

export interface LexResult {
  tokens: Token[]
  errors: ExpressionError[]
}

const OPERATORS = ['<>', '<=', '>=', '!=', '^', '*', '/', '%', '+', '-', '&', '=', '<', '>']
const TEXT_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', "'": "'", '\\': '\\' }

const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9'
const isIdentStart = (ch: string | undefined) => ch !== undefined && /[A-Za-z_]/.test(ch)
const isIdentPart = (ch: string | undefined) => ch !== undefined && /[A-Za-z0-9_]/.test(ch)

/** Splits a formula into tokens with 0-based offsets; the last token is always `eof`. */
export function lex(source: string): LexResult {
  const tokens: Token[] = []
  const errors: ExpressionError[] = []
  const n = source.length
  let i = 0
  while (i < n) {
    const ch = source[i]
    const start = i
    if (/\s/.test(ch)) {
      i++
    } else if (ch === '{') {
      let name = ''
      i++
      let closed = false
      while (i < n) {
        const c = source[i]
        if (c === '\\' && (source[i + 1] === '}' || source[i + 1] === '\\')) {
          name += source[i + 1]
          i += 2
        } else if (c === '}') {
          i++
          closed = true
          break
        } else {
          name += c
          i++
        }
      }
      if (!closed) errors.push({ type: 'syntax', message: 'Unterminated column reference: missing }', position: start })
      tokens.push({ kind: 'ref', value: name, pos: start, end: i, ...(closed ? {} : { broken: true }) })
    } else if (ch === '"' || ch === "'") {
      let text = ''
      i++
      let closed = false
      while (i < n) {
        const c = source[i]
        if (c === '\\' && i + 1 < n) {
          const next = source[i + 1]
          text += TEXT_ESCAPES[next] ?? `\\${next}`
          i += 2
        } else if (c === ch) {
          i++
          closed = true
          break
        } else {
          text += c
          i++
        }
      }
      if (!closed) errors.push({ type: 'syntax', message: `Unterminated text literal: missing ${ch}`, position: start })
      tokens.push({ kind: 'text', value: text, pos: start, end: i, ...(closed ? {} : { broken: true }) })
    } else if (isDigit(ch) || (ch === '.' && isDigit(source[i + 1]))) {
      i = skipNumber(source, i)
      tokens.push({ kind: 'number', value: source.slice(start, i), pos: start, end: i })
    } else if (isIdentStart(ch)) {
      while (isIdentPart(source[i])) i++
      let dotted = false
      while (source[i] === '.' && isIdentStart(source[i + 1])) {
        dotted = true
        i++
        while (isIdentPart(source[i])) i++
      }
      tokens.push({ kind: 'ident', value: source.slice(start, i), pos: start, end: i, dotted })
    } else if (ch === '(' || ch === ')' || ch === ',') {
      i++
      tokens.push({ kind: ch, value: ch, pos: start, end: i })
    } else {
      const op = OPERATORS.find((o) => source.startsWith(o, i))
      if (op) {
        i += op.length
        tokens.push({ kind: 'op', value: op, pos: start, end: i })
      } else {
        errors.push({ type: 'syntax', message: `Unexpected character "${ch}"`, position: start })
        i++
      }
    }
  }
  tokens.push({ kind: 'eof', value: '', pos: n, end: n })
  return { tokens, errors }
}

/** Skips `12`, `3.5`, `.5`, `1e-3`; returns the offset after the number. */
function skipNumber(s: string, i: number): number {
  while (isDigit(s[i])) i++
  if (s[i] === '.') {
    i++
    while (isDigit(s[i])) i++
  }
  if ((s[i] === 'e' || s[i] === 'E') && (isDigit(s[i + 1]) || ((s[i + 1] === '+' || s[i + 1] === '-') && isDigit(s[i + 2])))) {
    i += 2
    while (isDigit(s[i])) i++
  }
  return i
}
