import { loadFhirPathEngineFor } from '../../engine/fhirpath/engine.ts'
import { type CompiledFormula, compileFormula, formulaFhirPaths } from '../../engine/formula/index.ts'
import { type FieldIssue, invalid } from '../../errors.ts'
import { evaluatePath } from '../../lib/formats/json-path.ts'
import { isVirtualName } from '../../rowstore/query/virtual.ts'
import { DEFAULT_IMPORT_BATCH, type ImportConfig } from './rows.import.schemas.ts'

type Row = Record<string, unknown>

export interface PreparedMapping {
  sourceField: string
  target: string
  /** The transformation compiled once, over one column named `value`. */
  transform?: CompiledFormula
}

/** An ImportConfig checked against the panel's columns, ready to apply to every row. */
export interface PreparedImport {
  mappings: PreparedMapping[]
  /** Target column names that must not be blank. */
  required: string[]
  /** Target column names whose values identify a row (its record key). */
  unique: string[]
  /** Target columns to create (options.createColumns). */
  missing: string[]
  updateExisting: boolean
  batchSize: number
  /** The FHIRPath expressions the transformations evaluate (mapRows loads the engine by them). */
  fhirPaths: (string | null)[]
}

interface PanelColumn {
  name: string
  columnType: string
}

/**
 * Checks the config against the panel (a bad config is a 400 naming each field, before anything is
 * written): targets are base columns of the panel or, with `createColumns`, new ones; a column is
 * the target of one mapping only; transformations compile; `requiredFields`/`uniqueFields` name a
 * mapped target column or source field; `updateExisting` needs `uniqueFields`.
 */
export async function prepareImport(config: ImportConfig, columns: PanelColumn[], panelId: number): Promise<PreparedImport> {
  const fhirPaths = config.mapping.flatMap((m) => (m.transformation === undefined ? [] : formulaFhirPaths(m.transformation)))
  await loadFhirPathEngineFor(fhirPaths)
  const issues: FieldIssue[] = []
  const byName = new Map(columns.map((c) => [c.name, c]))
  const targets = new Set<string>()
  const missing: string[] = []
  const mappings = config.mapping.map((m, i): PreparedMapping => {
    const at = `config.mapping.${i}`
    const target = m.targetColumn
    if (targets.has(target)) issues.push({ path: `${at}.targetColumn`, message: `'${target}' is the target of another mapping` })
    targets.add(target)
    const column = byName.get(target)
    if (column?.columnType === 'calculated') {
      issues.push({ path: `${at}.targetColumn`, message: `'${target}' is a calculated column; imports fill base columns` })
    } else if (!column && isVirtualName(target)) {
      issues.push({
        path: `${at}.targetColumn`,
        message: `'${target}' is a virtual column of the work state; imports fill base columns`,
      })
    } else if (!column && !config.options.createColumns) {
      issues.push({
        path: `${at}.targetColumn`,
        message: `panel ${panelId} has no column '${target}' (set options.createColumns to create it)`,
      })
    } else if (!column && !missing.includes(target)) missing.push(target)
    if (m.transformation === undefined) return { sourceField: m.sourceField, target }
    const transform = compileFormula(m.transformation, { columns: [{ name: 'value' }], selfName: '(transformation)' })
    for (const e of transform.errors) {
      const where = e.position === undefined ? '' : ` at position ${e.position}`
      const hint = e.suggestion ? ` (${e.suggestion})` : ''
      issues.push({ path: `${at}.transformation`, message: `${e.type} error${where}: ${e.message}${hint}` })
    }
    return { sourceField: m.sourceField, target, transform }
  })
  const resolve = (field: 'requiredFields' | 'uniqueFields') =>
    (config.validation[field] ?? []).flatMap((name, i) => {
      if (targets.has(name)) return [name]
      const bySource = config.mapping.find((m) => m.sourceField === name)
      if (bySource) return [bySource.targetColumn]
      issues.push({
        path: `config.validation.${field}.${i}`,
        message: `'${name}' is neither a mapped target column nor a source field`,
      })
      return []
    })
  const required = [...new Set(resolve('requiredFields'))]
  const unique = [...new Set(resolve('uniqueFields'))]
  const updateExisting = config.options.updateExisting === true
  if (updateExisting && unique.length === 0) {
    issues.push({ path: 'config.options.updateExisting', message: 'needs validation.uniqueFields to find the rows to update' })
  }
  if (issues.length > 0) throw invalid(issues, 'Invalid import config')
  const batchSize = config.options.batchSize ?? DEFAULT_IMPORT_BATCH
  return { mappings, required, unique, missing, updateExisting, batchSize, fhirPaths }
}

/** A source field's value in a row: the property of that name, else a dotted path into it. */
export function sourceValue(row: Row, field: string): unknown {
  if (Object.hasOwn(row, field)) return row[field]
  return field.includes('.') ? evaluatePath(row, field) : undefined
}

/**
 * 400 when a mapped source field is in no row of the file: a missing header (csv, excel) or a
 * field no json object has, most likely a typo. An empty file has nothing to check.
 */
export function checkSourceFields(prepared: PreparedImport, rows: Row[]) {
  if (rows.length === 0) return
  const issues: FieldIssue[] = []
  prepared.mappings.forEach((m, i) => {
    if (rows.some((r) => sourceValue(r, m.sourceField) !== undefined)) return
    const known = Object.keys(rows[0]).slice(0, 50)
    issues.push({
      path: `config.mapping.${i}.sourceField`,
      message: `'${m.sourceField}' is not a field of the data (its fields: ${known.join(', ') || 'none'})`,
    })
  })
  if (issues.length > 0) throw invalid(issues, 'Mapped source fields are missing from the data')
}
