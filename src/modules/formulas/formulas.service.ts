import { sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { loadFhirPathEngineFor } from '../../engine/fhirpath/engine.ts'
import {
  type Category,
  compileFormula,
  type ExpressionContext,
  expressionContext,
  type FormulaFunction,
  formulaFhirPaths,
  functionCatalogue,
  type ValidateResult,
  validateFormula,
} from '../../engine/formula/index.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { panelColumns } from '../columns/columns.queries.ts'
import { requirePanel } from '../panels/panels.service.ts'
import type { PreviewInput, ValidateInput } from './formulas.schemas.ts'

/** The function catalogue (FORMULAS.md): every function, or those of one category. */
export const listFunctions = (category?: Category): FormulaFunction[] => functionCatalogue(category)

/** Checks a formula against a panel's columns; stores nothing (FORMULAS.md "Endpoints"). */
export async function checkFormula(ctx: ServiceContext, input: ValidateInput): Promise<ValidateResult> {
  await requirePanel(ctx, input.panelId)
  await loadFhirPathEngineFor(formulaFhirPaths(input.formula))
  const result = validateFormula({
    formula: input.formula,
    columns: await panelColumns(ctx, input.panelId),
    selfName: input.name,
    dependencies: input.dependencies,
  })
  return result
}

/** What an editor needs for completion on a panel: its columns with types, the functions, the constants. */
export async function formulaContext(ctx: ServiceContext, panelId: number): Promise<ExpressionContext> {
  await requirePanel(ctx, panelId)
  return expressionContext(await panelColumns(ctx, panelId))
}

/** Rows a panel preview evaluates against: the first rows of the panel, current generations only. */
const PREVIEW_ROWS = (ctx: ServiceContext, panelId: number, limit: number) => sql`
  SELECT r.row_id, r.data, r.cells FROM records r
  JOIN data_sources s ON s.id = r.data_source_id AND s.current_generation = r.generation
  WHERE r.tenant_id = ${ctx.scope.tenantId} AND r.panel_id = ${panelId}
  ORDER BY r.id LIMIT ${limit}`

/**
 * Evaluates a formula without storing anything: against the given `values` (column name → value)
 * and optional source `record`, or against the first `limit` rows of a panel.
 */
export async function previewFormula(ctx: ServiceContext, input: PreviewInput) {
  const now = { now: () => ctx.clock.now() }
  const fhirPaths = formulaFhirPaths(input.formula)
  if (input.panelId === undefined) {
    noteAccess(ctx, { readsNothingStored: true })
    await loadFhirPathEngineFor(fhirPaths, input.record === undefined ? [] : [input.record])
    const names = Object.keys(input.values ?? {}).map((name) => ({ name }))
    const compiled = compileFormula(input.formula, { columns: names })
    if (compiled.errors.length > 0) return { returnType: compiled.returnType, errors: compiled.errors }
    const { value, error } = compiled.evaluate({ cells: input.values ?? {}, record: input.record }, now)
    return { returnType: compiled.returnType, value, ...(error ? { error } : {}) }
  }
  await requirePanel(ctx, input.panelId)
  // Values computed from a panel's stored rows, with their ids: a read of row-level data (docs/audit.md).
  noteAccess(ctx, { panelId: input.panelId, rowCount: 0, query: { formula: input.formula, limit: input.limit } })
  const cols = await panelColumns(ctx, input.panelId)
  await loadFhirPathEngineFor(fhirPaths)
  const compiled = compileFormula(input.formula, { columns: cols })
  if (compiled.errors.length > 0) return { returnType: compiled.returnType, errors: compiled.errors }
  const rows = await ctx.db.all<{ row_id: number; data: string; cells: string | null }>(
    PREVIEW_ROWS(ctx, input.panelId, input.limit),
  )
  noteAccess(ctx, { rowCount: rows.length })
  const records = rows.map((r) => JSON.parse(r.data) as object)
  await loadFhirPathEngineFor(fhirPaths, records)
  const values = rows.map((r, i) => {
    const stored = r.cells ? (JSON.parse(r.cells) as Record<string, unknown>) : {}
    const cells = Object.fromEntries(cols.map((c) => [c.name, stored[String(c.id)] ?? null]))
    const { value, error } = compiled.evaluate({ cells, record: records[i] }, now)
    // Named as the rows endpoints name the row: its lasting `_id` (docs/worklist.md "Row identity").
    return { _id: Number(r.row_id), value, ...(error ? { error } : {}) }
  })
  return { returnType: compiled.returnType, values }
}
