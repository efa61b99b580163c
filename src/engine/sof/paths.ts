import { toFhirPathError } from '../fhirpath/compile.ts'
import { type FhirPathEngine, fhirPathEngine } from '../fhirpath/engine.ts'
import { compileOnEngine, type EngineEvaluate } from '../fhirpath/functions.ts'
import { isMemberPath, navigate } from '../fhirpath/member-path.ts'
import { usesVariable } from './constants.ts'

/**
 * Paths of a view, compiled once each. A path runs in a context: the resource, or an element that
 * a `forEach`/`repeat` unnested. Member paths (`name.given`, `telecom.first()`) read the JSON
 * directly (member-path.ts) and need no FHIRPath evaluation; anything else goes to our FHIRPath
 * layer (functions.ts: join, boundaries, the key functions) with the element's FHIR type as its
 * base, so choice types (`value.ofType(string)`) resolve on an unnested element as on a resource.
 */

/**
 * What the elements of a context are, known when the view compiles:
 * - `{ resource }`: the resource itself, of that type;
 * - `{ base }`: plain JSON elements of that FHIR path or type (`Patient.contact`, `HumanName`),
 *   read by member navigation;
 * - `{}`: elements of no known static type, from the engine, which carry their own type.
 */
export interface PathContext {
  resource?: string
  base?: string
}

/** Per-evaluation inputs besides the element: %rowIndex and %resource. */
export interface Scope {
  resource: unknown
  rowIndex: number
}

/** A compiled path: its values for one element. */
export type Evaluate = (element: unknown, scope: Scope) => unknown[]

/** A compiled unnesting path: its values, and the context of those values for nested paths. */
export interface Step {
  evaluate: Evaluate
  context: PathContext
  /** The path as written (after constants), for positions of values the JSON does not hold. */
  expression: string
  /** Member segments when the step navigates the JSON itself (positions follow the navigation). */
  segments?: string[]
}

/** A path the engine cannot compile: the parser's or the probe's message. */
export class PathError extends Error {}

/** Compiles a column or `where` path in `context`. */
export function compileValue(expression: string, context: PathContext): Evaluate {
  const trimmed = expression.trim()
  if (trimmed === '%rowIndex') return (_element, scope) => [scope.rowIndex]
  if (trimmed === '$this') return (element) => (element === undefined || element === null ? [] : [element])
  const fast = memberReader(trimmed, context)
  if (fast) {
    // A member the JSON does not have but a choice sibling does (`value` → `valueString`) is the
    // engine's to read: compiled on the first element that needs it.
    let engine: Evaluate | undefined
    return (element, scope) => {
      const found = fast(element)
      if (found) return found
      engine ??= engineEvaluate(trimmed, context)
      return engine(element, scope)
    }
  }
  return engineEvaluate(trimmed, context)
}

/**
 * Compiles a `forEach`, `forEachOrNull` or `repeat` path in `context`; `typed: false` leaves the
 * unnesting to the engine even for a member path, so the elements carry their own types.
 */
export function compileStep(expression: string, context: PathContext, typed = true): Step {
  const trimmed = expression.trim()
  if (trimmed === '$this') return { evaluate: compileValue(trimmed, context), context, expression: trimmed, segments: [] }
  const model = fhirPathEngine().r4
  const segments = memberSegments(trimmed, context)
  const from = context.base ?? context.resource
  const base = typed && segments && from ? typeOfPath(model, from, segments) : undefined
  // Plain JSON elements only where their type is known statically; else the engine's own nodes.
  if (base && segments && !trimmed.endsWith('.first()')) {
    return {
      evaluate: (element) => navigate(element as Record<string, unknown>, segments, true) ?? [],
      context: { base },
      expression: trimmed,
      segments,
    }
  }
  if (base && segments) {
    return {
      evaluate: (element) => (navigate(element as Record<string, unknown>, segments, true) ?? []).slice(0, 1),
      context: { base },
      expression: trimmed,
      segments,
    }
  }
  return { evaluate: engineEvaluate(trimmed, context), context: {}, expression: trimmed }
}

// --- Internal helpers ---

/** Segments of a member path relative to the context (a leading `Patient.` dropped), else undefined. */
function memberSegments(expression: string, context: PathContext): string[] | undefined {
  if (!isMemberPath(expression)) return undefined
  const segments = (expression.endsWith('.first()') ? expression.slice(0, -'.first()'.length) : expression).split('.')
  if (/^[A-Z]/.test(segments[0])) {
    // A type name leads a path only at the resource (`Patient.name`); elsewhere it is the engine's.
    if (!context.resource || segments[0] !== context.resource) return undefined
    return segments.slice(1)
  }
  return segments
}

/** A member reader of `expression`, or undefined when it is not a member path here. */
function memberReader(expression: string, context: PathContext): ((element: unknown) => unknown[] | undefined) | undefined {
  const segments = memberSegments(expression, context)
  if (!segments) return undefined
  const first = expression.endsWith('.first()')
  if (segments.length === 0) return (element) => (first || element !== undefined ? [element] : [])
  return (element) => {
    if (typeof element !== 'object' || element === null) return []
    const found = navigate(element as Record<string, unknown>, segments, true)
    return found && first ? found.slice(0, 1) : found
  }
}

/**
 * The FHIR type path of a member path's values from `from` (a resource type, a type or an element
 * path), by the R4 model; undefined for a choice element (`value`), which only the engine resolves,
 * and for a member the model does not know.
 */
export function typeOfPath(model: FhirPathEngine['r4'], from: string, segments: string[]): string | undefined {
  const m = model as unknown as {
    choiceTypePaths: Record<string, unknown>
    pathsDefinedElsewhere: Record<string, string>
    path2Type: Record<string, string>
  }
  let current = from
  for (const segment of segments) {
    let path = `${current}.${segment}`
    path = m.pathsDefinedElsewhere[path] ?? path
    if (m.choiceTypePaths[path]) return undefined
    const type = m.path2Type[path]
    if (!type) return undefined
    current = type === 'BackboneElement' || type === 'Element' ? path : type
  }
  return current
}

/**
 * The engine's evaluation of `expression` in `context`, with %rowIndex and %resource when it reads
 * them. Throws PathError for invalid FHIRPath, and for an unknown function, which the engine only
 * finds when it runs (a probe on an empty element).
 */
function engineEvaluate(expression: string, context: PathContext): Evaluate {
  const engine = fhirPathEngine()
  let fn: EngineEvaluate
  try {
    fn = compileOnEngine(engine, context.base ? { base: context.base, expression } : expression)
  } catch (err) {
    throw new PathError(toFhirPathError(expression, err).message)
  }
  const vars = ['rowIndex', 'resource', 'rootResource'].filter((name) => usesVariable(expression, name))
  const probe = context.resource ? { resourceType: context.resource } : {}
  try {
    fn(probe, { rowIndex: 0, resource: probe, rootResource: probe })
  } catch (err) {
    const message = (err as Error)?.message ?? String(err)
    if (/not\s+implemented|is not a function|unknown function|Unsupported/i.test(message)) throw new PathError(message)
  }
  // No element (forEachOrNull over nothing) has no values, whatever the expression.
  if (vars.length === 0) return (element) => (element === null || element === undefined ? [] : fn(element))
  return (element, scope) =>
    element === null || element === undefined
      ? []
      : fn(element, { rowIndex: scope.rowIndex, resource: scope.resource, rootResource: scope.resource })
}
