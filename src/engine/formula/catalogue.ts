/**
 * The function registry and the catalogue shapes of spec §2.8 (FormulaFunction,
 * ExpressionContext). Every function is declared once, in functions/<category>.ts, with its
 * catalogue entry and its body.
 */
import type { ValueType } from './ast.ts'
import { conversionFunctions } from './functions/conversion.ts'
import { dateFunctions } from './functions/date.ts'
import { calendarFunctions } from './functions/date-calendar.ts'
import { logicalFunctions } from './functions/logical.ts'
import { lookupFunctions } from './functions/lookup.ts'
import { mathFunctions } from './functions/math.ts'
import { statisticalFunctions } from './functions/statistical.ts'
import { textFunctions } from './functions/text.ts'
import { regexFunctions } from './functions/text-regex.ts'
import { type Category, type FunctionDef, syntaxOf } from './functions/types.ts'
import type { Value } from './values.ts'

export type { Category, FunctionDef } from './functions/types.ts'
export { CATEGORIES } from './functions/types.ts'

const ALL: readonly FunctionDef[] = [
  ...textFunctions,
  ...regexFunctions,
  ...mathFunctions,
  ...dateFunctions,
  ...calendarFunctions,
  ...logicalFunctions,
  ...lookupFunctions,
  ...statisticalFunctions,
  ...conversionFunctions,
]

const BY_NAME = new Map(ALL.map((f) => [f.name, f]))

/** The function called `name` (any case), or undefined. */
export const lookupFunction = (name: string): FunctionDef | undefined => BY_NAME.get(name.toUpperCase())

export const functionNames = (): string[] => [...BY_NAME.keys()]

/** spec §2.8 FormulaFunction. */
export interface FormulaFunction {
  name: string
  category: Category
  description: string
  syntax: string
  parameters: { name: string; type: string; required: boolean; description: string }[]
  returnType: ValueType
  examples: { expression: string; description: string; result: Value }[]
}

const entry = (f: FunctionDef): FormulaFunction => ({
  name: f.name,
  category: f.category,
  description: f.description,
  syntax: syntaxOf(f),
  parameters: f.params.map(({ name, type, required, description }) => ({ name, type, required, description })),
  returnType: typeof f.returns === 'string' ? f.returns : 'any',
  examples: f.examples,
})

const CATALOGUE = ALL.map(entry).sort((a, b) => a.name.localeCompare(b.name))

/** The catalogue (optionally of one category), sorted by name. */
export function functionCatalogue(category?: Category): FormulaFunction[] {
  return category === undefined ? CATALOGUE : CATALOGUE.filter((f) => f.category === category)
}

export interface ContextColumn {
  name: string
  type?: string | null
  columnType?: string | null
}

/** spec §2.8 ExpressionContext: what an editor needs for completion. */
export interface ExpressionContext {
  availableColumns: { name: string; type: string; columnType: string }[]
  functions: FormulaFunction[]
  constants: { name: string; type: ValueType; value: Value; description: string }[]
}

const CONSTANTS: ExpressionContext['constants'] = [
  { name: 'TRUE', type: 'boolean', value: true, description: 'The logical value true (any case)' },
  { name: 'FALSE', type: 'boolean', value: false, description: 'The logical value false (any case)' },
]

/** The context of a panel's formulas: its columns with their declared types, the functions, the constants. */
export function expressionContext(columns: readonly ContextColumn[]): ExpressionContext {
  return {
    availableColumns: columns.map((c) => ({ name: c.name, type: c.type ?? 'text', columnType: c.columnType ?? 'base' })),
    functions: CATALOGUE,
    constants: CONSTANTS,
  }
}
