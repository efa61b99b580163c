import { and, asc, eq } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { columns } from '../../db/schema.ts'
import { type CellKind, kindOf } from '../../engine/cells/coerce.ts'
import type { ColumnLookup, ColumnRef } from '../../engine/filters/resolve.ts'
import { analyzeFormula } from '../../engine/formula/index.ts'

type ColumnRow = Pick<typeof columns.$inferSelect, 'id' | 'name' | 'type' | 'columnType' | 'formula'>

/** A panel's columns as rows and filters see them, in id order, with a lookup by name. */
export interface PanelColumns {
  list: ColumnRef[]
  byName: ColumnLookup
}

/** Loads the panel's columns (the caller has checked the panel belongs to the tenant). */
export async function loadPanelColumns(ctx: ServiceContext, panelId: number): Promise<PanelColumns> {
  const rows = await ctx.db
    .select({ id: columns.id, name: columns.name, type: columns.type, columnType: columns.columnType, formula: columns.formula })
    .from(columns)
    .where(and(eq(columns.tenantId, ctx.scope.tenantId), eq(columns.panelId, panelId)))
    .orderBy(asc(columns.id))
  return panelColumnsOf(rows)
}

/** Column refs with their kinds; names are unique within a panel. */
export function panelColumnsOf(rows: ColumnRow[]): PanelColumns {
  const list = rows.map((c) => ({ id: c.id, name: c.name, kind: columnKind(c, rows) }))
  const map = new Map(list.map((c) => [c.name, c]))
  return { list, byName: (name) => map.get(name) }
}

const FROM_FORMULA: Record<string, CellKind> = { number: 'number', boolean: 'boolean', date: 'date', array: 'list' }

/**
 * The kind a column's cells hold: its declared type; a calculated column left at the default text
 * type takes the type its formula is inferred to return (`{Age} * 2` holds numbers).
 */
export function columnKind(column: ColumnRow, all: readonly ColumnRow[]): CellKind {
  const declared = kindOf(column.type)
  if (column.columnType !== 'calculated' || declared !== 'text' || !column.formula) return declared
  // The return type alone: no FHIRPath check, so reading rows never loads the FHIRPath engine.
  const { returnType } = analyzeFormula(column.formula, { columns: all, selfName: column.name, checkFhirPaths: false })
  return FROM_FORMULA[returnType] ?? 'text'
}
