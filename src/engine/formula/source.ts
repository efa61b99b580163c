/**
 * Source paths and FHIRPATH(): FHIRPath expressions (the shared engine of ../fhirpath, R4 model)
 * evaluated against the row's source record. Compile once and keep the result; a compiled formula
 * owns a PathCache so materialising many rows compiles each distinct expression once. Member paths
 * read the record without the engine; for anything else the caller loads it first
 * (loadFhirPathEngineFor with formulaFhirPaths).
 */
import { fhirPathEngine } from '../fhirpath/engine.ts'
import { compileOnEngine } from '../fhirpath/functions.ts'
import { isMemberPath, memberNavigator } from '../fhirpath/member-path.ts'
import { walk } from './ast.ts'
import { lookupFunction } from './catalogue.ts'
import { fail } from './errors.ts'
import { parse } from './parser.ts'
import { normalize, type Value } from './values.ts'

export type CompiledPath = (record: object | undefined) => Value

type EngineFn = (resource: unknown) => unknown

/**
 * The engine's compiler, with the functions base columns have too (fhirpath/functions.ts), so a
 * FHIRPATH() answers as a base column with the same expression; its calls throw the parser's error.
 * Taken before any expression is read, so an engine not loaded throws here, as the caller's bug,
 * never as the expression's problem.
 */
function engineCompiler(): (expression: string) => EngineFn {
  const engine = fhirPathEngine()
  return (expression) => compileOnEngine(engine, expression)
}

/**
 * The FHIRPath expressions a formula evaluates, for loadFhirPathEngineFor(): its source paths and
 * FHIRPATH() arguments, `null` for an argument known only at run time (`FHIRPATH({Expr})`).
 */
export function formulaFhirPaths(formula: string): (string | null)[] {
  const { ast } = parse(formula)
  if (!ast) return []
  const expressions: (string | null)[] = []
  for (const node of walk(ast)) {
    if (node.kind === 'path') expressions.push(node.path)
    else if (node.kind === 'call' && lookupFunction(node.name)?.name === 'FHIRPATH') {
      const [arg] = node.args
      expressions.push(arg?.kind === 'text' ? arg.value : null)
    }
  }
  return expressions
}

/** The parser's message when `expression` is not valid FHIRPath, else undefined. */
export function fhirPathProblem(expression: string): string | undefined {
  if (isMemberPath(expression)) return undefined
  const compile = engineCompiler()
  try {
    compile(expression)
    return undefined
  } catch (error) {
    return (error as Error).message
  }
}

/** No result is blank, one result is the value, several are a list. */
function collapse(results: unknown[]): Value {
  if (results.length === 0) return null
  if (results.length === 1) return normalize(results[0])
  return results.map(normalize)
}

/** Compiles `expression`; invalid FHIRPath is #VALUE! with the parser's message. */
export function compilePath(expression: string): CompiledPath {
  // A member path is always valid: the navigator reads it, and the engine is compiled only for the
  // first record the navigator leaves to it (a FHIR choice type such as `Observation.value`).
  const navigate = isMemberPath(expression) ? memberNavigator(expression) : undefined
  let fn: EngineFn | undefined
  if (!navigate) {
    const compile = engineCompiler()
    try {
      fn = compile(expression)
    } catch (error) {
      return () => fail('VALUE', `invalid FHIRPath "${expression}": ${(error as Error).message}`)
    }
  }
  return (record) => {
    if (record === undefined || record === null) return null
    const found = navigate?.(record)
    if (found) return collapse(found)
    fn ??= engineCompiler()(expression)
    let out: unknown
    try {
      out = fn(record)
    } catch (error) {
      return fail('VALUE', `FHIRPath "${expression}" failed: ${(error as Error).message}`)
    }
    return collapse(Array.isArray(out) ? out : [out])
  }
}

/** Compiled expressions by text, owned by one compiled formula (at most `limit` kept). */
export class PathCache {
  private readonly paths = new Map<string, CompiledPath>()
  constructor(private readonly limit = 1000) {}

  get(expression: string): CompiledPath {
    let path = this.paths.get(expression)
    if (!path) {
      path = compilePath(expression)
      if (this.paths.size >= this.limit) this.paths.delete(this.paths.keys().next().value as string)
      this.paths.set(expression, path)
    }
    return path
  }

  get size(): number {
    return this.paths.size
  }
}
