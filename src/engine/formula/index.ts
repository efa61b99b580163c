/**
 * The formula engine (FORMULAS.md): pure code, no Hono, drizzle, unstorage or runtime APIs; the
 * clock is passed in. Entry points: validateFormula, compileFormula, functionCatalogue,
 * expressionContext, evaluationOrder, and the reference helpers used by the columns module.
 */
export type { Node, ValueType } from './ast.ts'
export {
  CATEGORIES,
  type Category,
  type ContextColumn,
  type ExpressionContext,
  expressionContext,
  type FormulaFunction,
  functionCatalogue,
} from './catalogue.ts'
export {
  type AnalyzeOptions,
  analyzeFormula,
  evaluationOrder,
  type FormulaAnalysis,
  type FormulaColumn,
  type ValidateInput,
  type ValidateResult,
  validateFormula,
} from './check.ts'
export type { CellError, CellErrorCode, ExpressionError, ExpressionErrorType } from './errors.ts'
export { type CellResult, type Clock, type CompiledFormula, compileFormula, type FormulaRow } from './evaluate.ts'
export { columnValueType } from './infer.ts'
export { parse } from './parser.ts'
export * from './references.ts'
export { formulaFhirPaths } from './source.ts'
export type { Value } from './values.ts'
