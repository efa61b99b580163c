/**
 * Evaluation (FORMULAS.md "Values and types"): a formula is parsed and checked once and compiled
 * into closures, so materialising many rows never re-parses. Run-time failures never escape a
 * cell: they answer `{ value: null, error: { code, message } }`.
 */
import { FhirPathEngineNotLoaded } from '../fhirpath/engine.ts'
import type { Node, ValueType } from './ast.ts'
import { lookupFunction } from './catalogue.ts'
import { type AnalyzeOptions, analyzeFormula } from './check.ts'
import { type CellError, type ExpressionError, FormulaError, fail } from './errors.ts'
import { power } from './functions/math.ts'
import type { CallContext, Thunk } from './functions/types.ts'
import { parse } from './parser.ts'
import { formatReference } from './references.ts'
import { PathCache } from './source.ts'
import { compare, finite, normalize, toNumber, toText, type Value } from './values.ts'

/** One row as the evaluator sees it: column values by name and the source record, if any. */
export interface FormulaRow {
  cells: Record<string, unknown>
  record?: object
}

/** The time source of TODAY() and NOW(); the engine never reads the system clock itself. */
export interface Clock {
  now(): Date
}

export interface CellResult {
  value: Value
  error?: CellError
}

export interface CompiledFormula {
  source: string
  /** Every static error (empty for a valid formula); evaluation still answers per cell. */
  errors: ExpressionError[]
  dependencies: string[]
  returnType: Exclude<ValueType, 'blank'>
  evaluate(row: FormulaRow, clock: Clock): CellResult
}

interface Env {
  cells: Record<string, unknown>
  record: object | undefined
  clock: Clock | undefined
}

type Fn = (env: Env) => Value

/**
 * Parses, checks and compiles a formula once. `context.columns` (when given) are the panel's
 * columns: a reference to any other name is then #REF! at run time. FHIRPath expressions (source
 * paths and FHIRPATH("…")) are compiled once per distinct text and cached in this object.
 */
export function compileFormula(source: string, context: Partial<AnalyzeOptions> = {}): CompiledFormula {
  const analysis = analyzeFormula(source, { columns: context.columns ?? [], selfName: context.selfName })
  const known = context.columns ? new Set(context.columns.map((c) => c.name)) : undefined
  const paths = new PathCache()
  const env: Env = { cells: {}, record: undefined, clock: undefined }
  const ctx: CallContext = {
    now: () => (env.clock ? env.clock.now() : fail('VALUE', 'no clock was given for TODAY() or NOW()')),
    fhirpath: (expression) => paths.get(expression)(env.record),
  }
  const { ast, errors } = parse(source)
  const root: Fn = ast
    ? compileNode(ast, { known, paths, ctx })
    : () => fail('VALUE', `the formula does not parse: ${errors[0]?.message ?? 'syntax error'}`)
  return {
    source,
    errors: analysis.errors,
    dependencies: analysis.dependencies,
    returnType: analysis.returnType,
    evaluate(row, clock) {
      env.cells = row.cells
      env.record = row.record
      env.clock = clock
      try {
        const value = root(env)
        return { value: typeof value === 'number' ? finite(value) : value }
      } catch (error) {
        if (error instanceof FormulaError) return { value: null, error: { code: error.code, message: error.message } }
        if (error instanceof FhirPathEngineNotLoaded) throw error
        return { value: null, error: { code: 'VALUE', message: (error as Error)?.message ?? String(error) } }
      } finally {
        env.cells = {}
        env.record = undefined
      }
    },
  }
}

interface Scope {
  known: Set<string> | undefined
  paths: PathCache
  ctx: CallContext
}

function compileNode(node: Node, scope: Scope): Fn {
  switch (node.kind) {
    case 'number':
    case 'text':
    case 'boolean': {
      const value = node.value
      return () => value
    }
    case 'ref': {
      const name = node.name
      if (scope.known && !scope.known.has(name)) return () => fail('REF', `unknown column ${formatReference(name)}`)
      return (env) => normalize(env.cells[name])
    }
    case 'path': {
      const path = scope.paths.get(node.path)
      return (env) => path(env.record)
    }
    case 'word': {
      const name = node.name
      return () => fail('REF', `unknown name "${name}" (column references are written in braces)`)
    }
    case 'unary': {
      const operand = compileNode(node.operand, scope)
      return node.op === '-' ? (env) => -toNumber(operand(env)) : (env) => toNumber(operand(env))
    }
    case 'binary':
      return binary(node.op, compileNode(node.left, scope), compileNode(node.right, scope))
    case 'call':
      return call(node, scope)
  }
}

function binary(op: Extract<Node, { kind: 'binary' }>['op'], l: Fn, r: Fn): Fn {
  switch (op) {
    case '+':
      return (env) => finite(toNumber(l(env)) + toNumber(r(env)))
    case '-':
      return (env) => finite(toNumber(l(env)) - toNumber(r(env)))
    case '*':
      return (env) => finite(toNumber(l(env)) * toNumber(r(env)))
    case '/':
      return (env) => {
        const a = toNumber(l(env))
        const b = toNumber(r(env))
        return b === 0 ? fail('DIV_ZERO', 'division by zero') : finite(a / b)
      }
    case '%':
      return (env) => {
        const a = toNumber(l(env))
        const b = toNumber(r(env))
        return b === 0 ? fail('DIV_ZERO', 'division by zero') : a - b * Math.floor(a / b)
      }
    case '^':
      return (env) => power(toNumber(l(env)), toNumber(r(env)))
    case '&':
      return (env) => toText(l(env)) + toText(r(env))
    case '=':
      return (env) => compare(l(env), r(env)) === 0
    case '!=':
    case '<>':
      return (env) => compare(l(env), r(env)) !== 0
    case '<':
      return (env) => compare(l(env), r(env)) < 0
    case '<=':
      return (env) => compare(l(env), r(env)) <= 0
    case '>':
      return (env) => compare(l(env), r(env)) > 0
    case '>=':
      return (env) => compare(l(env), r(env)) >= 0
  }
}

function call(node: Extract<Node, { kind: 'call' }>, scope: Scope): Fn {
  const def = lookupFunction(node.name)
  if (!def) return () => fail('NAME', `unknown function ${node.name}`)
  const n = node.args.length
  if (n < def.min || n > def.max) return () => fail('VALUE', `${def.name} got ${n} arguments`)
  const args = node.args.map((a) => compileNode(a, scope))
  const { ctx } = scope
  if (def.lazy) {
    return (env) =>
      def.call(
        args.map(
          (f): Thunk =>
            () =>
              f(env),
        ),
        ctx,
      )
  }
  if (n === 0) return () => def.call([], ctx)
  if (n === 1) {
    const [a] = args
    return (env) => def.call([a(env)], ctx)
  }
  return (env) =>
    def.call(
      args.map((f) => f(env)),
      ctx,
    )
}
