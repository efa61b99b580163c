/**
 * The functions we give the FHIRPath engine on top of its own (its `userInvocationTable`): the
 * SQL-on-FHIR v2 key functions, and our versions of `join`, `lowBoundary` and `highBoundary`,
 * whose answers in the `fhirpath` package differ from what the official SQL-on-FHIR v2 tests
 * (vendored in tests/fixtures/sql-on-fhir-v2/tests: fn_join.json, fn_boundary.json, fhirpath.json)
 * expect. Every compile of an expression goes through compileOnEngine(), so base columns, the
 * FHIRPATH() formula function and the formula preview answer alike.
 *
 * Nothing is imported from `fhirpath` here: the engine loads on first need (engine.ts), and the
 * functions read its helpers from fhirPathEngine() when they run, i.e. after it loaded.
 * tests/engine/fhirpath/functions.test.ts holds a canary per override that asserts the package's
 * own answer: when one fails, the package changed and the override may go.
 */
import { type FhirPathEngine, fhirPathEngine } from './engine.ts'

/**
 * The engine's compiled expression: evaluates against one record (or, compiled with a `base`, one
 * element of that FHIR type), answering a list; `vars` are its `%` environment variables.
 */
export type EngineEvaluate = (resource: unknown, vars?: Record<string, unknown>) => unknown[]

/**
 * An expression and, for one evaluated against an element rather than a resource, the element's
 * FHIR path or type (`Patient.contact`, `HumanName`): the engine then knows its choice types.
 */
export type EngineExpression = string | { base: string; expression: string }

/** Compiles `expression` with our functions; throws the engine's own error for invalid FHIRPath. */
export function compileOnEngine(engine: FhirPathEngine, expression: EngineExpression): EngineEvaluate {
  return engine.fhirpath.compile(expression as never, engine.r4, { userInvocationTable } as never) as EngineEvaluate
}

// --- Internal helpers ---

/** What a user function receives from the engine for its input or an argument. */
type Nodes = unknown[]

const keyOf = (resource: unknown): string | undefined => {
  if (!resource || typeof resource !== 'object') return undefined
  const { resourceType, id } = resource as { resourceType?: unknown; id?: unknown }
  return typeof resourceType === 'string' && typeof id === 'string' ? `${resourceType}/${id}` : undefined
}

const data = (node: unknown) => (node && typeof node === 'object' && 'data' in node ? (node as { data: unknown }).data : node)

/**
 * `join([separator])`: the strings of the input joined. Over an empty input the package answers
 * empty (the FHIRPath text's reading); the SQL-on-FHIR tests (`string join`, tagged shareable)
 * expect `""`, and a column of joined names reads better as an empty text than as no value.
 */
function join(inputs: Nodes, separator?: unknown): string[] {
  const parts: string[] = []
  for (const item of inputs) {
    if (typeof item === 'string') parts.push(item)
    else if (item !== null && item !== undefined) throw new Error('Join requires a collection of strings.')
  }
  return [parts.join(typeof separator === 'string' ? separator : '')]
}

const BOUNDARY_TYPES = 'a Decimal, Date, DateTime, or Time'

/** A DateTime boundary string with a time part and no offset (`2010-10-10T00:00:00.000`). */
const DATE_TIME_WITHOUT_OFFSET = /^\d{4}-\d{2}-\d{2}T[\d:.]+$/

/**
 * `lowBoundary([precision])` / `highBoundary([precision])`, on the package's own boundary methods,
 * with two corrections:
 * - a FHIR `decimal` element that is a whole number is taken at one decimal place: JSON parsing
 *   turns `1.0` into 1, which the package reads as `1` (±0.5), where FHIR means `1.0` (±0.05);
 * - a DateTime boundary with a time part but no offset gets the extreme one, `+14:00` for the low
 *   boundary and `-12:00` for the high one (the earliest and latest instants it may stand for),
 *   where the package leaves the offset out. Dates and Times have no offset.
 * An integer (a FHIRPath literal `1`, a FHIR `integer`, a plain JSON number) stays at its own
 * precision, ±0.5.
 */
function boundary(high: boolean) {
  return function (this: { getDecimal(value: number | string): unknown }, inputs: Nodes, precision?: unknown): unknown[] {
    if (inputs.length === 0) return []
    const { util, FP_Decimal } = fhirPathEngine().fhirpath
    if (inputs.length > 1) throw new Error(`Unexpected collection ${util.toJSON(inputs)}; expected ${BOUNDARY_TYPES}`)
    const node = inputs[0]
    let value = util.valDataConverted(node)
    if (value === null || value === undefined) return []
    if (typeof value === 'number' || typeof value === 'bigint') value = this.getDecimal(Number(value))
    const digits = precision instanceof FP_Decimal ? precision.toNumber() : (precision as number | undefined)
    const method = high ? 'highBoundary' : 'lowBoundary'
    if (value instanceof FP_Decimal) {
      const text = value.toString()
      if ((node as { fhirNodeDataType?: unknown }).fhirNodeDataType === 'decimal' && /^[+-]?\d+$/.test(text)) {
        value = this.getDecimal(`${text}.0`)
      }
      return [(value as unknown as Boundable)[method](digits)].filter((v) => v !== null)
    }
    if (isDateOrTime(value)) {
      const result = value[method](digits)
      if (result === null) return []
      const text = String(result)
      if (!DATE_TIME_WITHOUT_OFFSET.test(text)) return [result]
      const DateTime = result.constructor as new (ctx: unknown, text: string) => unknown
      return [new DateTime((result as { ctx?: unknown }).ctx, `${text}${high ? '-12:00' : '+14:00'}`)]
    }
    throw new Error(`Expected ${BOUNDARY_TYPES}, but got ${util.toJSON(value ?? node)}`)
  }
}

interface Boundable {
  lowBoundary(precision?: number): Boundable | null
  highBoundary(precision?: number): Boundable | null
}

/**
 * The package's Date, DateTime and Time values: its classes are not exported, so they are known by
 * the boundary precision their class declares (FP_TimeBase reads the same static). The unit tests
 * of every date, date-time and time case fail if that changes.
 */
const isDateOrTime = (value: unknown): value is Boundable =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value.constructor as { _boundaryDefaultPrecision?: unknown })._boundaryDefaultPrecision === 'number'

const userInvocationTable = {
  // SQL-on-FHIR v2 key functions: keys are `ResourceType/id`, so references and resources join.
  getResourceKey: {
    fn: (inputs: Nodes) => inputs.map((n) => keyOf(data(n))).filter((k): k is string => k !== undefined),
    arity: { 0: [] },
  },
  getReferenceKey: {
    fn: (inputs: Nodes, type?: { name?: string } | string) => {
      const wanted = typeof type === 'string' ? type : type?.name
      return inputs.flatMap((n) => {
        const ref = (data(n) as { reference?: unknown } | undefined)?.reference
        if (typeof ref !== 'string') return []
        const match = ref.match(/(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/)
        if (!match || (wanted && match[1] !== wanted)) return []
        return [`${match[1]}/${match[2]}`]
      })
    },
    arity: { 0: [], 1: ['TypeSpecifier'] },
  },
  // Receives plain values (the engine unwraps its nodes): strings stay strings.
  join: { fn: join, arity: { 0: [], 1: ['String'] } },
  // Receive the engine's nodes, which carry the FHIR type (`decimal`) and its Date/DateTime values.
  lowBoundary: { fn: boundary(false), arity: { 0: [], 1: ['Integer'] }, internalStructures: true },
  highBoundary: { fn: boundary(true), arity: { 0: [], 1: ['Integer'] }, internalStructures: true },
}
