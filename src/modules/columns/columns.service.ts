import { and, eq, sql } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import type { ServiceContext } from '../../context.ts'
import { insertedId } from '../../db/client.ts'
import { columns, dataSources, type FieldChanges } from '../../db/schema.ts'
import { AppError, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { bumpColumnsVersion } from '../../rowstore/materialise.ts'
import { columnKind } from '../../rowstore/query/columns.ts'
import { refreshRowIndex } from '../../rowstore/query/row-index.ts'
import { recomputeAfterColumnChange } from '../../rowstore/recompute.ts'
import { changeInsert, createdFields, diffFields } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import type { PanelDto } from '../panels/panels.schemas.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { panelColumns } from './columns.queries.ts'
import {
  applySourcePaths,
  assertFhirPath,
  assertFieldsOfKind,
  assertUniqueName,
  BASE_ONLY,
  CALCULATED_ONLY,
  checkFormula,
  dependantsConflict,
  dependantsOf,
  quoted,
  type Rewrite,
  renamedIn,
} from './columns.rules.ts'
import {
  type ColumnDto,
  type ColumnRow,
  type CreateBaseColumnInput,
  type CreateCalculatedColumnInput,
  toColumnDto,
  type UpdateColumnInput,
} from './columns.schemas.ts'
import { assertNotViewColumn } from './columns.view-owned.ts'

const COMMON = ['name', 'type', 'properties', 'metadata'] as const
// readBy moves with the paths (columns.rules.ts): a column switched to reading by its FHIRPath is a change.
const TRACKED = [...COMMON, ...BASE_ONLY, 'readBy', ...CALCULATED_ONLY] as const
const CREATED = {
  base: ['columnType', ...COMMON, ...BASE_ONLY],
  calculated: ['columnType', ...COMMON, ...CALCULATED_ONLY],
} as const
const NOT_BASE = { sourceField: null, fhirPath: null, readBy: null, dataSourceId: null }
const NOT_CALCULATED = { formula: null, dependencies: null }

type NewColumn = Omit<ColumnRow, 'id' | 'tenantId' | 'userId' | 'panelId' | 'createdAt' | 'updatedAt'>

export interface PanelColumns {
  baseColumns: ColumnDto[]
  calculatedColumns: ColumnDto[]
}

/** The columns of a panel the caller owns, each kind ordered by id (CONTRACT: Columns). */
export async function listColumns(ctx: ServiceContext, panelId: number): Promise<PanelColumns> {
  await requirePanel(ctx, panelId)
  const rows = await panelColumns(ctx, panelId)
  return {
    baseColumns: rows.filter((c) => c.columnType === 'base').map((c) => dtoAmong(c, rows)),
    calculatedColumns: rows.filter((c) => c.columnType === 'calculated').map((c) => dtoAmong(c, rows)),
  }
}

/**
 * Creates a base column. `fhirPath` and `sourceField` are both stored, one defaulting to the other
 * (CONTRACT: Columns), and the column reads by the one given (`fhirPath` when both are); a `dataSourceId` must name a data source of the same panel, else 404. The
 * FHIRPath itself is checked by the later engine, not here.
 */
export async function createBaseColumn(ctx: ServiceContext, panelId: number, input: CreateBaseColumnInput): Promise<ColumnDto> {
  const panel = await requirePanel(ctx, panelId)
  const existing = await panelColumns(ctx, panelId)
  assertUniqueName(existing, input.name, panelId)
  if (input.fhirPath !== undefined) await assertFhirPath(input.fhirPath)
  if (input.dataSourceId !== undefined) await requireDataSource(ctx, panelId, input.dataSourceId)
  const fhirPath = input.fhirPath ?? input.sourceField ?? null
  const { name, type, properties, metadata } = input
  return insertColumn(ctx, panel, existing, {
    ...NOT_CALCULATED,
    columnType: 'base',
    name,
    type,
    sourceField: input.sourceField ?? fhirPath,
    fhirPath,
    readBy: input.fhirPath !== undefined ? 'fhirPath' : 'sourceField',
    dataSourceId: input.dataSourceId ?? null,
    properties,
    metadata,
  })
}

/**
 * Creates a calculated column after the formula checks of FORMULAS.md "Dependencies and cycles":
 * known references, no cycle, and `dependencies` (when sent) listing every referenced column;
 * when omitted it is filled with the derived references. Any failure is one 400 FORMULA_ERROR
 * carrying every ExpressionError.
 */
export async function createCalculatedColumn(
  ctx: ServiceContext,
  panelId: number,
  input: CreateCalculatedColumnInput,
): Promise<ColumnDto> {
  const panel = await requirePanel(ctx, panelId)
  const existing = await panelColumns(ctx, panelId)
  assertUniqueName(existing, input.name, panelId)
  const dependencies = await checkFormula(input.formula, input.dependencies, input.name, existing)
  const { name, type, formula, properties, metadata } = input
  return insertColumn(ctx, panel, existing, {
    ...NOT_BASE,
    columnType: 'calculated',
    name,
    type,
    formula,
    dependencies,
    properties,
    metadata,
  })
}

/** Where the caller addressed a column: `panelId` when it came through a nested alias route. */
export interface ColumnAddress {
  panelId?: number
}

/**
 * Updates either kind of column (CONTRACT: Columns; FORMULAS.md "Dependencies and cycles"). A new
 * formula or dependencies list is checked as on create, cycles included. Renaming a column that
 * calculated columns reference is a 409 listing them, unless `cascade` rewrites `{Old}` → `{New}`
 * in their formulas and dependencies in the same batch (one UPDATE change per dependant). Owners
 * of the panel's views are warned (COLUMN_CHANGED, warning).
 */
export async function updateColumn(
  ctx: ServiceContext,
  id: number,
  input: UpdateColumnInput,
  options: { cascade?: boolean } & ColumnAddress = {},
): Promise<ColumnDto> {
  const before = await requireColumn(ctx, id, options)
  await assertNotViewColumn(ctx, before)
  assertFieldsOfKind(before, input)
  let others = (await panelColumns(ctx, before.panelId)).filter((c) => c.id !== id)
  const patch: Partial<ColumnRow> = {}
  if (input.name !== undefined) patch.name = input.name
  if (input.type !== undefined) patch.type = input.type
  if (input.properties !== undefined) patch.properties = input.properties
  if (input.metadata !== undefined) patch.metadata = input.metadata
  const name = patch.name ?? before.name
  const renamed = name !== before.name

  let dependants: Rewrite[] = []
  if (renamed) {
    assertUniqueName(others, name, before.panelId)
    const found = dependantsOf(others, before.name)
    if (found.length > 0 && !options.cascade) {
      throw dependantsConflict(before.name, found, 'rename with ?cascade=true to rewrite their formulas')
    }
    dependants = found.map((row) => ({ row, patch: renamedIn(row, before.name, name) }))
    const rewritten = new Map(dependants.map((d) => [d.row.id, d.patch]))
    others = others.map((c) => ({ ...c, ...rewritten.get(c.id) }))
  }

  if (before.columnType === 'calculated') {
    if (input.formula !== undefined) patch.formula = input.formula
    const formula = patch.formula ?? before.formula ?? ''
    if (input.formula !== undefined || input.dependencies !== undefined) {
      patch.dependencies = await checkFormula(formula, input.dependencies, name, others)
    } else if (renamed) {
      await checkFormula(formula, undefined, name, others)
    }
  } else {
    if (input.dataSourceId !== undefined) {
      if (input.dataSourceId !== null) await requireDataSource(ctx, before.panelId, input.dataSourceId)
      patch.dataSourceId = input.dataSourceId
    }
    if (input.fhirPath !== undefined && input.fhirPath !== null) await assertFhirPath(input.fhirPath)
    applySourcePaths(before, input, patch)
  }

  const diff = diffFields(before, patch, TRACKED)
  if (Object.keys(diff).length === 0) return dtoAmong(before, others)
  const now = isoNow(ctx.clock)
  patch.updatedAt = now
  const statements: BatchItem<'sqlite'>[] = [
    ctx.db.update(columns).set(patch).where(ownColumn(ctx, id)).returning(),
    bumpColumnsVersion(ctx.db, ctx.scope.tenantId, before.panelId),
    changeInsert(ctx, { panelId: before.panelId, entityType: 'Column', entityId: id, action: 'UPDATE', changes: diff }),
    ...dependants.flatMap((d) => [
      ctx.db
        .update(columns)
        .set({ ...d.patch, updatedAt: now })
        .where(ownColumn(ctx, d.row.id)),
      changeInsert(ctx, {
        panelId: before.panelId,
        entityType: 'Column',
        entityId: d.row.id,
        action: 'UPDATE',
        changes: diffFields(d.row, d.patch, ['formula', 'dependencies']),
      }),
    ]),
    notifyViewOwners(ctx, {
      panelId: before.panelId,
      type: 'COLUMN_CHANGED',
      impact: 'warning',
      message:
        (renamed ? `Column "${before.name}" was renamed to "${name}"` : `Column "${name}" was updated`) +
        ` (${Object.keys(diff).join(', ')})` +
        (dependants.length > 0 ? `; formulas of ${quoted(dependants.map((d) => d.row.name))} were rewritten` : ''),
    }),
  ]
  const [[row]] = (await ctx.db.batch(statements as [BatchItem<'sqlite'>])) as unknown as [ColumnRow[]]
  if (!row) throw notFound('Column', id, ctx.scope.tenantId)
  await recomputeAfterColumnChange(ctx, before.panelId)
  return dtoAmong(row, others)
}

/**
 * Deletes a column; refused with 409 (listing them) while calculated columns reference it. Owners
 * of views that show it are told the change is breaking (COLUMN_CHANGED, breaking).
 */
export async function deleteColumn(ctx: ServiceContext, id: number, at: ColumnAddress = {}): Promise<void> {
  const row = await requireColumn(ctx, id, at)
  await assertNotViewColumn(ctx, row)
  const found = dependantsOf(await panelColumns(ctx, row.panelId), row.name).filter((c) => c.id !== id)
  if (found.length > 0) throw dependantsConflict(row.name, found, 'change or delete them first')
  const removed: FieldChanges = {}
  for (const f of CREATED[row.columnType]) removed[f] = { oldValue: row[f] }
  await ctx.db.batch([
    ctx.db.delete(columns).where(ownColumn(ctx, id)),
    bumpColumnsVersion(ctx.db, ctx.scope.tenantId, row.panelId),
    changeInsert(ctx, { panelId: row.panelId, entityType: 'Column', entityId: id, action: 'DELETE', changes: removed }),
    notifyViewOwners(ctx, {
      panelId: row.panelId,
      type: 'COLUMN_CHANGED',
      impact: 'breaking',
      message: `Column "${row.name}" was deleted`,
      showingColumn: row.name,
    }),
  ])
  await recomputeAfterColumnChange(ctx, row.panelId)
  await refreshRowIndex(ctx.db, ctx.scope.tenantId, row.panelId)
}

// --- Internal helpers ---

const ownColumn = (ctx: ServiceContext, id: number) => and(eq(columns.id, id), eq(columns.tenantId, ctx.scope.tenantId))

/**
 * The column if it is the tenant's and its panel is live and the caller's (and is the `panelId` it
 * was addressed under, when it came through a nested alias route); else a 404 naming the column.
 */
async function requireColumn(ctx: ServiceContext, id: number, at: ColumnAddress): Promise<ColumnRow> {
  const ofPanel = at.panelId === undefined ? undefined : eq(columns.panelId, at.panelId)
  const [row] = await ctx.db
    .select()
    .from(columns)
    .where(and(ownColumn(ctx, id), ofPanel))
    .limit(1)
  if (!row) throw notFound('Column', id, ctx.scope.tenantId)
  try {
    await requirePanel(ctx, row.panelId)
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND') throw notFound('Column', id, ctx.scope.tenantId)
    throw err
  }
  return row
}

async function requireDataSource(ctx: ServiceContext, panelId: number, id: number) {
  const [found] = await ctx.db
    .select({ id: dataSources.id })
    .from(dataSources)
    .where(and(eq(dataSources.id, id), eq(dataSources.tenantId, ctx.scope.tenantId), eq(dataSources.panelId, panelId)))
    .limit(1)
  if (!found) throw notFound('Data source', id, ctx.scope.tenantId)
}

async function insertColumn(
  ctx: ServiceContext,
  panel: PanelDto,
  existing: readonly ColumnRow[],
  column: NewColumn,
): Promise<ColumnDto> {
  const now = isoNow(ctx.clock)
  // Columns belong to the panel's owner (CONTRACT: Ownership), also when an admin creates them.
  const values = {
    ...column,
    tenantId: ctx.scope.tenantId,
    userId: panel.userId,
    panelId: panel.id,
    createdAt: now,
    updatedAt: now,
  }
  const id = sql`last_insert_rowid()`
  const [inserted] = await ctx.db.batch([
    ctx.db.insert(columns).values(values),
    bumpColumnsVersion(ctx.db, ctx.scope.tenantId, panel.id),
    changeInsert(ctx, {
      panelId: panel.id,
      entityType: 'Column',
      entityId: id,
      action: 'CREATE',
      changes: createdFields(values, CREATED[column.columnType]),
    }),
  ])
  const newId = insertedId(inserted)
  await recomputeAfterColumnChange(ctx, panel.id)
  await refreshRowIndex(ctx.db, ctx.scope.tenantId, panel.id)
  return dtoAmong({ ...values, id: newId }, existing)
}

/**
 * A column as answered, with the kind its cells are read as among the panel's other columns (a
 * calculated column's kind may come from the return type of its formula, which names them).
 */
function dtoAmong(row: ColumnRow, panel: readonly ColumnRow[]): ColumnDto {
  return toColumnDto(row, columnKind(row, [...panel.filter((c) => c.id !== row.id), row]))
}
