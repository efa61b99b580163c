import { describe, expect, it } from 'vitest'
import type { Node } from '../../../src/engine/formula/ast.ts'
import { lex } from '../../../src/engine/formula/lexer.ts'
import { MAX_DEPTH, parse } from '../../../src/engine/formula/parser.ts'

/** The tree as a compact S-expression, to read precedence and associativity at a glance. */
function show(node: Node | null): string {
  if (!node) return 'null'
  switch (node.kind) {
    case 'number':
      return String(node.value)
    case 'text':
      return JSON.stringify(node.value)
    case 'boolean':
      return node.value ? 'TRUE' : 'FALSE'
    case 'ref':
      return `{${node.name}}`
    case 'path':
      return `path:${node.path}`
    case 'word':
      return `word:${node.name}`
    case 'call':
      return `${node.name}(${node.args.map(show).join(' ')})`
    case 'unary':
      return `(${node.op}${show(node.operand)})`
    case 'binary':
      return `(${show(node.left)} ${node.op} ${show(node.right)})`
  }
}
const tree = (source: string) => {
  const { ast, errors } = parse(source)
  expect(errors).toEqual([])
  return show(ast)
}
const errorsOf = (source: string) => parse(source).errors.map((e) => [e.message, e.position])

describe('lexer', () => {
  it('reads every token kind with 0-based positions', () => {
    const { tokens, errors } = lex(`{A b} + 1.5e3 & "x" <= Patient.birthDate, f(TRUE)`)
    expect(errors).toEqual([])
    expect(tokens.map((t) => [t.kind, t.value, t.pos])).toEqual([
      ['ref', 'A b', 0],
      ['op', '+', 6],
      ['number', '1.5e3', 8],
      ['op', '&', 14],
      ['text', 'x', 16],
      ['op', '<=', 20],
      ['ident', 'Patient.birthDate', 23],
      [',', ',', 40],
      ['ident', 'f', 42],
      ['(', '(', 43],
      ['ident', 'TRUE', 44],
      [')', ')', 48],
      ['eof', '', 49],
    ])
  })

  it('decodes text escapes in both quote styles and reference escapes', () => {
    const { tokens } = lex(`"a\\"b\\n\\t\\\\" 'it\\'s' {x\\}y\\\\z}`)
    expect(tokens.slice(0, 3).map((t) => t.value)).toEqual(['a"b\n\t\\', "it's", 'x}y\\z'])
  })

  it('reads numbers: integers, decimals, leading dot, exponents', () => {
    expect(
      lex('12 3.5 .5 1e-3 2E+2')
        .tokens.slice(0, 5)
        .map((t) => Number(t.value)),
    ).toEqual([12, 3.5, 0.5, 0.001, 200])
  })

  it('reports unterminated text and references and stray characters, and goes on', () => {
    expect(lex('1 # 2 $').errors.map((e) => e.position)).toEqual([2, 6])
    expect(lex('"abc').errors).toEqual([{ type: 'syntax', message: 'Unterminated text literal: missing "', position: 0 }])
    expect(lex('1 + {abc').errors).toEqual([{ type: 'syntax', message: 'Unterminated column reference: missing }', position: 4 }])
  })
})

describe('parser: operators, precedence and associativity', () => {
  it('parses every binary operator', () => {
    for (const op of ['^', '*', '/', '%', '+', '-', '&', '=', '!=', '<>', '<', '<=', '>', '>=']) {
      expect(tree(`1 ${op} 2`)).toBe(`(1 ${op} 2)`)
    }
  })

  it('binds ^ tightest, then unary minus, then * / %, then + -, then &, then comparisons', () => {
    expect(tree('1 + 2 * 3 ^ 2')).toBe('(1 + (2 * (3 ^ 2)))')
    expect(tree('-2 ^ 2')).toBe('(-(2 ^ 2))')
    expect(tree('-2 * 3')).toBe('((-2) * 3)')
    expect(tree('1 + 2 & 3 * 4')).toBe('((1 + 2) & (3 * 4))')
    expect(tree('"a" & 1 = "a1"')).toBe('(("a" & 1) = "a1")')
    expect(tree('1 + 2 > 2 * 1')).toBe('((1 + 2) > (2 * 1))')
    expect(tree('6 % 4 * 2')).toBe('((6 % 4) * 2)')
  })

  it('makes ^ right-associative and lets its exponent carry a sign', () => {
    expect(tree('2 ^ 3 ^ 2')).toBe('(2 ^ (3 ^ 2))')
    expect(tree('2 ^ -1')).toBe('(2 ^ (-1))')
  })

  it('makes the other binary operators left-associative', () => {
    expect(tree('8 - 3 - 2')).toBe('((8 - 3) - 2)')
    expect(tree('8 / 4 / 2')).toBe('((8 / 4) / 2)')
    expect(tree('"a" & "b" & "c"')).toBe('(("a" & "b") & "c")')
    expect(tree('1 < 2 = TRUE')).toBe('((1 < 2) = TRUE)')
  })

  it('honours parentheses and nested unary signs', () => {
    expect(tree('(1 + 2) * 3')).toBe('((1 + 2) * 3)')
    expect(tree('--1 + +2')).toBe('((-(-1)) + (+2))')
  })

  it('parses calls with any case, zero or more arguments, booleans any case, paths and bare words', () => {
    expect(tree('round({A}, 2)')).toBe('ROUND({A} 2)')
    expect(tree('Today()')).toBe('TODAY()')
    expect(tree('IF(true, False, tRuE)')).toBe('IF(TRUE FALSE TRUE)')
    expect(tree('Patient.name.given & name.family')).toBe('(path:Patient.name.given & path:name.family)')
    expect(tree('Age')).toBe('word:Age')
  })

  it('keeps source positions on nodes', () => {
    const { ast } = parse('  {A} + ROUND(2, 1)')
    expect(ast).toMatchObject({
      kind: 'binary',
      pos: 2,
      opPos: 6,
      end: 19,
      left: { pos: 2, end: 5 },
      right: { kind: 'call', pos: 8 },
    })
  })
})

describe('parser: syntax errors with positions', () => {
  it('points at the culprit', () => {
    expect(errorsOf('1 +')).toEqual([['Unexpected end of formula: expected a value', 3]])
    expect(errorsOf('1 2')).toEqual([['Unexpected "2": expected an operator', 2]])
    expect(errorsOf('(1 + 2')).toEqual([['Unclosed (: missing )', 0]])
    expect(errorsOf('SUM(1 2)')).toEqual([['Unexpected "2": expected , or )', 6]])
    expect(errorsOf('1 + 2)')).toEqual([['Unexpected ) without a matching (', 5]])
    expect(errorsOf('* 2')).toEqual([['Unexpected "*": expected a value', 0]])
    expect(errorsOf('SUM(1,)')).toEqual([['Unexpected ) : expected a value', 6]])
    expect(errorsOf('')).toEqual([['Formula is empty', 0]])
  })

  it('reports lexer errors together with the parser error, by position', () => {
    expect(errorsOf('ROUND((1) ) ) + "open')).toEqual([
      ['Unexpected ) without a matching (', 12],
      ['Unterminated text literal: missing "', 16],
    ])
  })

  it('refuses formulas nested too deeply instead of overflowing the stack', () => {
    const deep = `${'('.repeat(MAX_DEPTH + 5)}1${')'.repeat(MAX_DEPTH + 5)}`
    expect(parse(deep).errors[0].message).toMatch(/nests deeper/)
    expect(parse('1' + ' + 1'.repeat(2000)).errors[0].message).toMatch(/chains more than/)
    expect(parse(`${'('.repeat(50)}1${')'.repeat(50)}`).errors).toEqual([])
  })
})
