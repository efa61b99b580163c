import { checkFhirPath } from '../../engine/fhirpath/compile.ts'
import { loadFhirPathEngineFor } from '../../engine/fhirpath/engine.ts'
import {
  analyzeFormula,
  checkDependencies,
  extractReferences,
  formulaFhirPaths,
  renameReference,
} from '../../engine/formula/index.ts'
import type { FieldIssue } from '../../errors.ts'
import { conflict, formulaError, invalid } from '../../errors.ts'
import { isVirtualName, VIRTUAL_NAMES } from '../../rowstore/query/virtual.ts'
import type { ColumnRow, UpdateColumnInput } from './columns.schemas.ts'

/**
 * The rules a column change must pass (CONTRACT: Columns; FORMULAS.md "Dependencies and cycles"):
 * unique names, valid FHIRPath and formulas, fields of the right kind, and the dependants of a
 * column that is renamed or deleted.
 */

export const BASE_ONLY = ['sourceField', 'fhirPath', 'dataSourceId'] as const
export const CALCULATED_ONLY = ['formula', 'dependencies'] as const

/** 400 naming `fhirPath` with the parser's message and 0-based position (issue: invalid FHIRPath). */
export async function assertFhirPath(expression: string) {
  await loadFhirPathEngineFor([expression])
  const problem = checkFhirPath(expression)
  if (!problem) return
  throw invalid([{ path: 'fhirPath', message: problem.message }], problem.message)
}

/**
 * Names are unique within a panel (the docs are silent), so a `{Name}` reference names one column;
 * and none is the name of a virtual column of the work state (`_status`, …; docs/worklist.md),
 * which a column of that name would hide from every filter, sort and view: a 400.
 */
export function assertUniqueName(existing: ColumnRow[], name: string, panelId: number) {
  assertNotVirtualName(name, 'name')
  const clash = existing.find((c) => c.name === name)
  if (clash) {
    throw conflict(`A column named "${name}" already exists in panel ${panelId}; column names must be unique within a panel`, [
      { id: clash.id, name: clash.name },
    ])
  }
}

/** 400 when `name` is a virtual column's (`path` names the field that gave it). */
export function assertNotVirtualName(name: string, path: string) {
  if (!isVirtualName(name)) return
  const message = `'${name}' is the name of a virtual column of the work state (${VIRTUAL_NAMES.join(', ')}); choose another name`
  throw invalid([{ path, message }], message)
}

/** Calculated columns whose formula references `name`. */
export const dependantsOf = (rows: ColumnRow[], name: string) =>
  rows.filter((c) => c.columnType === 'calculated' && c.formula && extractReferences(c.formula).some((r) => r.name === name))

export const quoted = (names: string[]) => names.map((n) => `"${n}"`).join(', ')

/** 409 listing the dependants of a column that cannot be renamed or deleted (FORMULAS.md). */
export const dependantsConflict = (name: string, found: ColumnRow[], hint: string) =>
  conflict(
    `Column "${name}" is referenced by calculated columns (${quoted(found.map((c) => c.name))}); ${hint}`,
    found.map(({ id, name }) => ({ id, name })),
  )

export type Rewrite = { row: ColumnRow; patch: Pick<ColumnRow, 'formula' | 'dependencies'> }

/** A dependant's formula and dependencies with `{from}` renamed to `{to}` (a cascading rename). */
export const renamedIn = (row: ColumnRow, from: string, to: string): Rewrite['patch'] => ({
  formula: renameReference(row.formula ?? '', from, to),
  dependencies: (row.dependencies ?? []).map((d) => (d === from ? to : d)),
})

/**
 * Runs the formula checks (one FORMULA_ERROR with every problem) and returns the dependencies to
 * store: the list sent, deduplicated, or the derived ones (columns, then source paths) when none was sent.
 */
export async function checkFormula(
  formula: string,
  dependencies: string[] | undefined,
  name: string,
  others: ColumnRow[],
): Promise<string[]> {
  await loadFhirPathEngineFor(formulaFhirPaths(formula))
  const analysis = analyzeFormula(formula, { columns: others, selfName: name })
  const errors = [...analysis.errors]
  if (dependencies !== undefined) {
    const names = new Set([name, ...others.map((c) => c.name)])
    errors.push(...checkDependencies(analysis.references, dependencies, names, analysis.sourcePaths))
  }
  if (errors.length > 0) {
    const shown = errors.slice(0, 5).map((e) => e.message)
    if (errors.length > 5) shown.push(`and ${errors.length - 5} more`)
    throw formulaError(errors, `Formula is invalid: ${shown.join('; ')}`)
  }
  return dependencies === undefined ? analysis.dependencies : [...new Set(dependencies)]
}

/** 400 for fields of the other kind: a base column has no formula, a calculated one no source. */
export function assertFieldsOfKind(row: ColumnRow, input: UpdateColumnInput) {
  const issues: FieldIssue[] = []
  const foreign = row.columnType === 'base' ? CALCULATED_ONLY : BASE_ONLY
  for (const f of foreign) {
    if (input[f] !== undefined && input[f] !== null) issues.push({ path: f, message: `a ${row.columnType} column has no ${f}` })
  }
  if (issues.length > 0) throw invalid(issues)
}

/**
 * New fhirPath/sourceField of a base column. When only one is sent and the two were equal (one
 * defaulted to the other), both move; a pair left with nothing is a 400. The column then reads by
 * the FHIRPath when one was sent, by the source field when only that moved the pair.
 */
export function applySourcePaths(before: ColumnRow, input: UpdateColumnInput, patch: Partial<ColumnRow>) {
  const { fhirPath: f, sourceField: s } = input
  if (f === undefined && s === undefined) return
  const linked = before.fhirPath === before.sourceField
  let fhirPath = f === undefined ? (linked && s ? s : before.fhirPath) : f
  let sourceField = s === undefined ? (linked && f ? f : before.sourceField) : s
  fhirPath ??= sourceField
  sourceField ??= fhirPath
  if (!fhirPath) throw invalid([{ path: 'fhirPath', message: 'fhirPath or sourceField is required' }])
  patch.fhirPath = fhirPath
  patch.sourceField = sourceField
  patch.readBy = f ? 'fhirPath' : f === null || linked ? 'sourceField' : before.readBy
}
