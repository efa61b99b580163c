import { FhirPathEngineNotLoaded, fhirPathEngine } from './engine.ts'
import { compileOnEngine } from './functions.ts'
import { isMemberPath, memberNavigator } from './member-path.ts'

/**
 * FHIRPath for base columns (DATA-ENGINE: Rows): compiled once per expression with the R4 model and
 * our functions (functions.ts: the SQL-on-FHIR `getResourceKey()` and `getReferenceKey([type])`,
 * and `join`, `lowBoundary`, `highBoundary` as SQL-on-FHIR expects them). Anything but a
 * member path needs the engine loaded first (engine.ts, loadFhirPathEngineFor).
 */

/** A compiled expression: evaluates against one record, always answering a list. */
export interface CompiledFhirPath {
  expression: string
  evaluate(resource: unknown): unknown[]
}

/** A FHIRPath that does not parse or names an unknown function; `position` is 0-based. */
export class FhirPathError extends Error {
  constructor(
    message: string,
    readonly position?: number,
  ) {
    super(message)
    this.name = 'FhirPathError'
  }
}

const PROBE = { resourceType: 'Patient', id: 'probe' }

type Evaluate = (resource: unknown) => unknown[]

/**
 * Compiles an expression; throws FhirPathError with the parser's message and position for a syntax
 * error, and for a function the engine does not know (found by evaluating once on an empty Patient).
 */
export function compileFhirPath(expression: string): CompiledFhirPath {
  // Member paths (`Patient.name.given`, optionally `.first()`) skip the FHIRPath engine: same
  // result, ~10x cheaper per cell. Anything the navigator cannot answer exactly (a choice type
  // such as `Observation.value`) goes to the engine.
  const fast = memberNavigator(expression)
  if (fast && isMemberPath(expression)) {
    // Always valid, so the engine is compiled only for the first record the navigator leaves to it.
    let fn: Evaluate | undefined
    const engine = (resource: unknown) => {
      fn ??= engineCompile(expression)
      return fn(resource)
    }
    return { expression, evaluate: (resource) => fast(resource) ?? engine(resource) }
  }
  const fn = engineCompile(expression)
  try {
    fn(PROBE)
  } catch (err) {
    const message = (err as Error)?.message ?? String(err)
    if (/not\s+implemented|is not a function|unknown function|Unsupported/i.test(message)) throw new FhirPathError(message)
  }
  return { expression, evaluate: fast ? (resource) => fast(resource) ?? fn(resource) : (resource) => fn(resource) }
}

/** The problem with an expression, or undefined when it compiles. */
export function checkFhirPath(expression: string): FhirPathError | undefined {
  try {
    compileFhirPath(expression)
    return undefined
  } catch (err) {
    if (err instanceof FhirPathEngineNotLoaded) throw err
    return err instanceof FhirPathError ? err : new FhirPathError(String(err))
  }
}

// --- Internal helpers ---

/** The engine's compiled expression; throws FhirPathError for a syntax error. */
function engineCompile(expression: string): Evaluate {
  const engine = fhirPathEngine()
  try {
    return compileOnEngine(engine, expression)
  } catch (err) {
    throw toFhirPathError(expression, err)
  }
}

/** The engine's parse error as a FhirPathError whose message and position count from the expression's start. */
export function toFhirPathError(expression: string, err: unknown): FhirPathError {
  const raw = (err as Error)?.message ?? String(err)
  const match = raw.match(/line:\s*(\d+);\s*column:\s*(\d+);\s*message:\s*([\s\S]*)/)
  if (!match) return new FhirPathError(`Invalid FHIRPath: ${raw}`)
  const [line, column] = [Number(match[1]), Number(match[2])]
  const lines = expression.split('\n')
  let position = column
  for (let i = 0; i < line - 1 && i < lines.length; i++) position += lines[i].length + 1
  return new FhirPathError(`Invalid FHIRPath at position ${position}: ${match[3].trim()}`, position)
}
