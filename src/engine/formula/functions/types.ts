/** The shape every formula function is declared in: catalogue metadata and body in one place. */
import type { ValueType } from '../ast.ts'
import type { Value } from '../values.ts'

export type Category = 'text' | 'math' | 'date' | 'logical' | 'lookup' | 'statistical' | 'conversion'

export const CATEGORIES: readonly Category[] = ['text', 'math', 'date', 'logical', 'lookup', 'statistical', 'conversion']

/** What a function body may ask of the evaluation: the clock and the row's source record. */
export interface CallContext {
  now(): Date
  /** Evaluates a FHIRPath expression against the row's source record (compiled once, cached). */
  fhirpath(expression: string): Value
}

export type Thunk = () => Value

export interface Param {
  name: string
  /** A ValueType or a union such as `number|array`. */
  type: string
  required: boolean
  description: string
  /** The last parameter may repeat. */
  variadic: boolean
}

export interface Example {
  expression: string
  description: string
  result: Value
}

interface Declared {
  name: string
  category: Category
  description: string
  params: Param[]
  /** Static return type, or one computed from the argument types (IF, CHOOSE, …). */
  returns: ValueType | ((args: ValueType[]) => ValueType)
  examples: Example[]
  min: number
  max: number
}

/** Eager functions get values; lazy ones (IF, IFS, SWITCH, CHOOSE, IFERROR, ISERROR…) get thunks. */
export type FunctionDef = Declared &
  ({ lazy?: false; call(args: Value[], ctx: CallContext): Value } | { lazy: true; call(args: Thunk[], ctx: CallContext): Value })

/** `[name, type, description]`; the name ends with `?` when optional and `...` when it repeats. */
type ParamSpec = [string, string, string]

interface Spec {
  name: string
  description: string
  params: ParamSpec[]
  returns: Declared['returns']
  /** `[expression, result, description]`: literals only; a test evaluates each one. */
  examples: [string, Value, string][]
}

type EagerSpec = Spec & { lazy?: false; call(args: Value[], ctx: CallContext): Value }
type LazySpec = Spec & { lazy: true; call(args: Thunk[], ctx: CallContext): Value }

/** Declares the functions of one category. */
export function category(cat: Category, specs: (EagerSpec | LazySpec)[]): FunctionDef[] {
  return specs.map((spec) => {
    const params = spec.params.map(([raw, type, description]): Param => {
      const variadic = raw.includes('...')
      const required = !raw.endsWith('?')
      return { name: raw.replace('...', '').replace('?', ''), type, required, description, variadic }
    })
    const last = params[params.length - 1]
    const max = last?.variadic ? Number.POSITIVE_INFINITY : params.length
    const min = params.filter((p) => p.required).length
    const examples = spec.examples.map(([expression, result, description]) => ({ expression, result, description }))
    return { ...spec, category: cat, params, examples, min, max } as FunctionDef
  })
}

/** `LEFT(text, [count])`, `SUM(number1, [number2, ...])`. */
export function syntaxOf(def: FunctionDef): string {
  const parts = def.params.map((p) => {
    if (p.variadic) return p.required ? `${p.name}1, [${p.name}2, ...]` : `[${p.name}1, ...]`
    return p.required ? p.name : `[${p.name}]`
  })
  return `${def.name}(${parts.join(', ')})`
}
