import { type CompiledFhirPath, compileFhirPath, FhirPathError } from '../fhirpath/compile.ts'
import { FhirPathEngineNotLoaded } from '../fhirpath/engine.ts'
import { CoercionError, cellFromCollection, cellFromValue } from './coerce.ts'
import { checkRules, compilePattern, type ValidationRules } from './validate.ts'

/**
 * Materialisation (DATA-ENGINE: Rows): each record becomes a row of cells, keyed by column id.
 * Base columns read the record by FHIRPath (compiled once per column) or by a dotted source field,
 * only for records of their data source when they name one; calculated columns run in dependency
 * order over the cells computed before them. A failure never aborts the row: the cell is blank and
 * the row carries `{ column, code, message }`. The one exception is the FHIRPath engine used before
 * it was loaded (engine.ts): a caller's bug, rethrown rather than reported as a cell error.
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
  /** Which of the two a base column reads by: the path the user gave (docs/views-and-rows.md). */
  readBy?: 'fhirPath' | 'sourceField' | null
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
  /** A base column's typed cell of a record; throws CoercionError for a value of the wrong type. */
  read?: (record: unknown) => unknown
  formula?: CompiledFormula
  rules?: ValidationRules
  pattern?: RegExp
}

/** Columns compiled for materialising many rows; build once per sync or recompute. */
export interface MaterialisePlan {
  columns: PlannedColumn[]
  /** Names of the base columns (whose stored cells `rematerialise` keeps); null when a calculated column shares one. */
  baseNames: Set<string> | null
}

/**
 * Compiles every column once. `ordered` must list calculated columns in dependency order after the
 * base columns (the formula engine's evaluation order). A column whose expression does not compile
 * materialises as blank cells with the compile error on every row.
 */
export function planColumns(ordered: ColumnDefinition[], compileFormula: FormulaCompiler): MaterialisePlan {
  const cache = new Map<string, CompiledFhirPath>()
  const baseNames = new Set(ordered.filter((c) => c.columnType === 'base').map((c) => c.name))
  const shared = ordered.some((c) => c.columnType === 'calculated' && baseNames.has(c.name))
  return {
    baseNames: shared ? null : baseNames,
    columns: ordered.map((column) => {
      const rules = (column.properties?.validation ?? undefined) as ValidationRules | undefined
      const planned: PlannedColumn = { key: String(column.id), column, rules, pattern: compilePattern(rules) }
      try {
        if (column.columnType === 'calculated') planned.formula = compileFormula(column)
        else planned.read = reader(column, cache)
      } catch (err) {
        if (err instanceof FhirPathEngineNotLoaded) throw err
        const message = (err as Error)?.message ?? String(err)
        planned.formula = () => ({ value: null, error: { code: 'REF', message } })
      }
      return planned
    }),
  }
}

/**
 * How a base column reads a record. A source-field column takes the JSON value at its field exactly;
 * a FHIRPath column evaluates its expression (compiled once per distinct expression) and makes the
 * cell by SQL-on-FHIR column rules. A column whose FHIRPath does not compile but that has a source
 * field (a CSV header with spaces stored before `readBy` existed) reads the field.
 */
function reader(column: ColumnDefinition, cache: Map<string, CompiledFhirPath>): ((record: unknown) => unknown) | undefined {
  const { fhirPath, sourceField, type } = column
  const byField = sourceField ? (record: unknown) => cellFromValue(fieldValue(record, sourceField), type) : undefined
  if (column.readBy === 'sourceField' && byField) return byField
  if (fhirPath) {
    try {
      let compiled = cache.get(fhirPath)
      if (!compiled) {
        compiled = compileFhirPath(fhirPath)
        cache.set(fhirPath, compiled)
      }
      const { evaluate } = compiled
      const collection = column.properties?.collection === true
      return (record) => cellFromCollection(evaluate(record), type, collection)
    } catch (err) {
      if (!byField || !(err instanceof FhirPathError)) throw err
    }
  }
  return byField
}

/** A record to materialise. */
export interface MaterialiseInput {
  dataSourceId: number
  data: unknown
  /**
   * A record of an `import` data source: its data is `{ <column name>: value }`, so every base
   * column reads the value stored under its own name (whatever its FHIRPath, source field or data
   * source), and a column the import did not fill is blank.
   */
  importedByName?: boolean
  /**
   * Cells given by a SQL-on-FHIR view for its columns, by column id (a row of a panel defined by a
   * ViewDefinition): those base columns take the given value, typed, instead of reading the record.
   */
  given?: Record<string, unknown>
}

/** One record's row. `dataSourceId` restricts base columns bound to a source. */
export function materialise(plan: MaterialisePlan, record: MaterialiseInput, now: Date): MaterialisedRow {
  const cells: Record<string, unknown> = {}
  const byName: Record<string, unknown> = {}
  const errors: CellError[] = []
  for (const p of plan.columns) {
    const { column } = p
    let value: unknown = null
    if (record.given && column.columnType === 'base' && Object.hasOwn(record.given, p.key)) {
      const given = record.given[p.key]
      value = typed(() => cellFromValue(given, column.type), column, errors)
    } else if (record.importedByName && column.columnType === 'base') {
      value = typed(() => cellFromValue(valueByName(record.data, column.name), column.type), column, errors)
    } else if (p.formula) {
      value = evaluated(p.formula, byName, record.data, now, column, errors)
    } else if (p.read && (column.dataSourceId == null || column.dataSourceId === record.dataSourceId)) {
      const read = p.read
      value = typed(() => read(record.data), column, errors)
    }
    validated(p, value, errors)
    cells[p.key] = value
    byName[column.name] = value
  }
  return { cells, errors }
}

/**
 * A row computed again from what is stored of it: the base columns keep their stored cells and
 * errors, the calculated columns are evaluated again over them (with the same `now` semantics),
 * so the row is what `materialise` would give it — provided the stored row was materialised from
 * its record by a plan with the same base columns (the caller's guarantee: recompute.ts) and no
 * calculated column reads the source record. Undefined when the stored cells lack a base column,
 * or the plan's names do not tell base errors apart (`baseNames` null): the row needs `materialise`.
 */
export function rematerialise(
  plan: MaterialisePlan,
  stored: { cells: Record<string, unknown>; errors: readonly CellError[] | null },
  now: Date,
): MaterialisedRow | undefined {
  const { baseNames } = plan
  if (!baseNames) return undefined
  const cells: Record<string, unknown> = {}
  const byName: Record<string, unknown> = {}
  // Base columns come first in a plan, each with its errors in column order: their stored errors
  // are the first part of the row's list, as `materialise` builds it.
  const errors = (stored.errors ?? []).filter((e) => baseNames.has(e.column))
  for (const p of plan.columns) {
    const { column } = p
    let value: unknown
    if (column.columnType === 'base') {
      if (!Object.hasOwn(stored.cells, p.key)) return undefined
      value = stored.cells[p.key]
    } else {
      value = p.formula ? evaluated(p.formula, byName, undefined, now, column, errors) : null
      validated(p, value, errors)
    }
    cells[p.key] = value
    byName[column.name] = value
  }
  return { cells, errors }
}

/** A calculated cell (or a column that did not compile): blank with its error on failure. */
function evaluated(
  formula: CompiledFormula,
  byName: Record<string, unknown>,
  data: unknown,
  now: Date,
  column: ColumnDefinition,
  errors: CellError[],
): unknown {
  const result = formula({ cells: byName, record: data }, now)
  if (result.error) errors.push({ column: column.name, ...result.error })
  return result.value ?? null
}

/** The column's validation rules over its cell (FORMULAS.md): a broken rule is an error of the row. */
function validated(p: PlannedColumn, value: unknown, errors: CellError[]): void {
  if (!p.rules) return
  const broken = checkRules(value, p.rules, p.pattern)
  if (broken) errors.push({ column: p.column.name, code: 'VALIDATION', message: `${p.column.name} ${broken}` })
}

/** The cell of a base column; a coercion failure is a blank cell with its error. */
function typed(read: () => unknown, column: ColumnDefinition, errors: CellError[]): unknown {
  try {
    return read()
  } catch (err) {
    if (err instanceof FhirPathEngineNotLoaded) throw err
    const code = err instanceof CoercionError ? err.code : 'VALUE'
    errors.push({ column: column.name, code, message: (err as Error)?.message ?? String(err) })
    return null
  }
}

/** What an import record (`{ <column name>: value }`) holds for a column, read by its name. */
function valueByName(data: unknown, name: string): unknown {
  if (!data || typeof data !== 'object' || !Object.hasOwn(data, name)) return undefined
  return (data as Record<string, unknown>)[name]
}

/**
 * A source field of a plain record: the key itself when the record has it (CSV headers may hold
 * spaces or dots), else a dotted path (`address.city`) through nested objects.
 */
function fieldValue(record: unknown, field: string): unknown {
  if (typeof record !== 'object' || record === null) return undefined
  if (Object.hasOwn(record, field)) return (record as Record<string, unknown>)[field]
  let current: unknown = record
  for (const segment of field.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, segment)) return undefined
    current = (current as Record<string, unknown>)[segment]
  }
  return current
}
