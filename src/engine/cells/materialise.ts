import { evaluatePath } from '../../connectors/shared/json-path.ts'
import { type CompiledFhirPath, compileFhirPath } from '../fhirpath/compile.ts'
import { CoercionError, toCell } from './coerce.ts'
import { checkRules, compilePattern, type ValidationRules } from './validate.ts'

/**
 * Materialisation (DATA-ENGINE: Rows): each record becomes a row of cells, keyed by column id.
 * Base columns read the record by FHIRPath (compiled once per column) or by a dotted source field,
 * only for records of their data source when they name one; calculated columns run in dependency
 * order over the cells computed before them. A failure never aborts the row: the cell is blank and
 * the row carries `{ column, code, message }`.
 */

export interface CellError {
  column: string
  code: string
  message: string
}

export interface MaterialisedRow {
  cells: Record<string, unknown>
  errors: CellError[]
}

/** A column as the service stores it (base or calculated). */
export interface ColumnDefinition {
  id: number
  name: string
  columnType: 'base' | 'calculated'
  type: string
  fhirPath?: string | null
  sourceField?: string | null
  dataSourceId?: number | null
  formula?: string | null
  properties?: Record<string, unknown> | null
}

/** The result of one formula evaluation (the formula engine's cell contract, FORMULAS.md). */
export interface FormulaResult {
  value: unknown
  error?: { code: string; message: string }
}

/** A compiled formula: evaluated over the row's cells by column name and its source record. */
export type CompiledFormula = (row: { cells: Record<string, unknown>; record: unknown }, now: Date) => FormulaResult

/** Compiles a calculated column's formula; supplied by the formula engine. */
export type FormulaCompiler = (column: ColumnDefinition) => CompiledFormula

interface PlannedColumn {
  key: string
  column: ColumnDefinition
  read?: (record: unknown) => unknown[]
  formula?: CompiledFormula
  rules?: ValidationRules
  pattern?: RegExp
}

/** Columns compiled for materialising many rows; build once per sync or recompute. */
export interface MaterialisePlan {
  columns: PlannedColumn[]
}

/**
 * Compiles every column once. `ordered` must list calculated columns in dependency order after the
 * base columns (the formula engine's evaluation order). A column whose expression does not compile
 * materialises as blank cells with the compile error on every row.
 */
export function planColumns(ordered: ColumnDefinition[], compileFormula: FormulaCompiler): MaterialisePlan {
  const cache = new Map<string, CompiledFhirPath>()
  return {
    columns: ordered.map((column) => {
      const rules = (column.properties?.validation ?? undefined) as ValidationRules | undefined
      const planned: PlannedColumn = { key: String(column.id), column, rules, pattern: compilePattern(rules) }
      try {
        if (column.columnType === 'calculated') planned.formula = compileFormula(column)
        else planned.read = reader(column, cache)
      } catch (err) {
        const message = (err as Error)?.message ?? String(err)
        planned.formula = () => ({ value: null, error: { code: 'REF', message } })
      }
      return planned
    }),
  }
}

/**
 * How a base column reads a record: its FHIRPath, compiled once per distinct expression; a
 * `sourceField` that is not valid FHIRPath (e.g. a CSV header with spaces, stored as fhirPath by
 * default) is read as a dotted path instead.
 */
function reader(column: ColumnDefinition, cache: Map<string, CompiledFhirPath>): ((record: unknown) => unknown[]) | undefined {
  const { fhirPath, sourceField } = column
  if (fhirPath) {
    try {
      let compiled = cache.get(fhirPath)
      if (!compiled) cache.set(fhirPath, (compiled = compileFhirPath(fhirPath)))
      return compiled.evaluate
    } catch (err) {
      if (!sourceField) throw err
    }
  }
  if (!sourceField) return undefined
  return (record) => {
    const v = evaluatePath(record, sourceField)
    return v === undefined ? [] : [v]
  }
}

/** One record's row. `dataSourceId` restricts base columns bound to a source. */
export function materialise(plan: MaterialisePlan, record: { dataSourceId: number; data: unknown }, now: Date): MaterialisedRow {
  const cells: Record<string, unknown> = {}
  const byName: Record<string, unknown> = {}
  const errors: CellError[] = []
  for (const p of plan.columns) {
    const { column } = p
    let value: unknown = null
    if (p.formula) {
      const result = p.formula({ cells: byName, record: record.data }, now)
      value = result.value ?? null
      if (result.error) errors.push({ column: column.name, ...result.error })
    } else if (p.read && (column.dataSourceId == null || column.dataSourceId === record.dataSourceId)) {
      try {
        value = toCell(p.read(record.data), column.type)
      } catch (err) {
        const code = err instanceof CoercionError ? err.code : 'VALUE'
        errors.push({ column: column.name, code, message: (err as Error)?.message ?? String(err) })
      }
    }
    if (p.rules) {
      const broken = checkRules(value, p.rules, p.pattern)
      if (broken) errors.push({ column: column.name, code: 'VALIDATION', message: `${column.name} ${broken}` })
    }
    cells[p.key] = value
    byName[column.name] = value
  }
  return { cells, errors }
}
