import { and, asc, eq, sql } from 'drizzle-orm'
import { columns, dataSources, panels } from '../db/schema.ts'
import type { Deps } from '../deps.ts'
import {
  type ColumnDefinition,
  type FormulaCompiler,
  type MaterialisedRow,
  type MaterialisePlan,
  materialise,
  planColumns,
} from '../engine/cells/materialise.ts'
import { loadFhirPathEngineFor } from '../engine/fhirpath/engine.ts'
import { compileFormula, evaluationOrder, formulaFhirPaths } from '../engine/formula/index.ts'
import { type PanelView, panelView, type StoredRow } from './expand.ts'

type ColumnRow = typeof columns.$inferSelect

/**
 * Materialised rows (DATA-ENGINE: Rows): cells are computed when records are written and when
 * columns change, so reading a view never evaluates FHIRPath or formulas. Every column change bumps
 * the panel's `columns_version`; a recompute reads every row of the panel in batches by id, writes
 * back only the rows whose cells changed, and then marks the panel `materialised_version` = that
 * version. A panel whose two versions differ is stale and is recomputed again. The FHIRPath engine
 * is loaded only when a plan or a batch needs it (loadPanelPlan, prepareRows; engine.ts).
 */

export interface PanelPlan {
  panelId: number
  version: number
  plan: MaterialisePlan
  /** The panel's `import` data sources: their records hold values by column name. */
  importSources: Set<number>
  /** The FHIRPath expressions the plan evaluates (base columns' and formulas'), for prepareRows. */
  fhirPaths: (string | null)[]
  /** The panel's ViewDefinition, when it is defined by one: records are stored as its rows (expand.ts). */
  view?: PanelView
}

/** The panel's columns compiled for materialisation: base columns, then calculated ones in dependency order. */
export async function loadPanelPlan(db: Deps['db'], tenantId: string, panelId: number): Promise<PanelPlan> {
  const [[panel], rows, imports] = await db.batch([
    db
      .select({ version: panels.columnsVersion, view: panels.viewDefinition, viewSource: panels.viewDataSourceId })
      .from(panels)
      .where(and(eq(panels.id, panelId), eq(panels.tenantId, tenantId))),
    db
      .select()
      .from(columns)
      .where(and(eq(columns.tenantId, tenantId), eq(columns.panelId, panelId)))
      .orderBy(asc(columns.id)),
    db
      .select({ id: dataSources.id })
      .from(dataSources)
      .where(and(eq(dataSources.tenantId, tenantId), eq(dataSources.panelId, panelId), eq(dataSources.type, 'import'))),
  ])
  const fhirPaths = rows.flatMap((c) =>
    c.columnType === 'calculated'
      ? formulaFhirPaths(c.formula ?? '')
      : c.fhirPath && c.readBy !== 'sourceField'
        ? [c.fhirPath]
        : [],
  )
  await loadFhirPathEngineFor(fhirPaths)
  return {
    panelId,
    version: panel?.version ?? 0,
    plan: planColumns(orderColumns(rows), formulaCompiler(rows)),
    importSources: new Set(imports.map((i) => i.id)),
    fhirPaths,
    view: panel?.view
      ? await panelView(
          panel.view,
          panel.viewSource,
          rows.filter((c) => c.columnType === 'base'),
        )
      : undefined,
  }
}

/**
 * Awaited before rowOf over a batch of records' data: loads the FHIRPath engine when the plan may
 * need it for them (a member path falls back to it on a FHIR resource), so rowOf stays synchronous.
 */
export const prepareRows = (plan: PanelPlan, data: Iterable<unknown>): Promise<void> =>
  loadFhirPathEngineFor(plan.fhirPaths, data)

/** One record's row under a plan (after prepareRows for its batch); `stored`: a row of a view (expand.ts). */
export function rowOf(plan: PanelPlan, dataSourceId: number, data: unknown, now: Date, stored?: StoredRow): MaterialisedRow {
  const input = { dataSourceId, data, importedByName: plan.importSources.has(dataSourceId), given: stored?.given }
  const row = materialise(plan.plan, input, now)
  if (stored?.viewError) row.errors.push(stored.viewError)
  return row
}

/** The SQL expression of the statement that bumps a panel's columns version (in a column change's batch). */
export const bumpColumnsVersion = (db: Deps['db'], tenantId: string, panelId: number) =>
  db.run(sql`UPDATE panels SET columns_version = columns_version + 1 WHERE id = ${panelId} AND tenant_id = ${tenantId}`)

function orderColumns(rows: ColumnRow[]): ColumnDefinition[] {
  const base = rows.filter((c) => c.columnType === 'base')
  let calculated: ColumnRow[]
  try {
    calculated = evaluationOrder(rows.filter((c) => c.columnType === 'calculated'))
  } catch {
    // A cycle cannot be stored (create/update refuse it); keep id order so every cell still reports.
    calculated = rows.filter((c) => c.columnType === 'calculated')
  }
  return [...base, ...calculated] as ColumnDefinition[]
}

/** Formulas compiled against the panel's columns, evaluated with the row's cells by name. */
function formulaCompiler(rows: ColumnRow[]): FormulaCompiler {
  const known = rows.map((c) => ({ name: c.name, type: c.type, formula: c.formula, columnType: c.columnType }))
  return (column) => {
    const compiled = compileFormula(column.formula ?? '', { columns: known, selfName: column.name })
    return (row, now) => {
      const result = compiled.evaluate({ cells: row.cells, record: row.record as object | undefined }, { now: () => now })
      return result.error ? { value: null, error: result.error } : { value: result.value }
    }
  }
}
