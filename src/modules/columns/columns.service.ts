import { and, asc, eq, sql } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import { columns, dataSources, type FieldChanges } from '../../db/schema.ts'
import { checkFhirPath } from '../../engine/fhirpath/compile.ts'
import { analyzeFormula, checkDependencies, extractReferences, renameReference } from '../../engine/formula/index.ts'
import { AppError, conflict, type FieldIssue, formulaError, invalid, notFound } from '../../errors.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { changeInsert, createdFields, diffFields } from '../changes/changes.service.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import type { PanelDto } from '../panels/panels.schemas.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { refreshRowIndex } from '../rows/rows.indexes.ts'
import { bumpColumnsVersion, recomputeAfterColumnChange } from '../rows/rows.materialise.ts'
import {
  type ColumnDto,
  type ColumnRow,
  type CreateBaseColumnInput,
  type CreateCalculatedColumnInput,
  toColumnDto,
  type UpdateColumnInput,
} from './columns.schemas.ts'

const COMMON = ['name', 'type', 'properties', 'metadata'] as const
const BASE_ONLY = ['sourceField', 'fhirPath', 'dataSourceId'] as const
const CALCULATED_ONLY = ['formula', 'dependencies'] as const
const TRACKED = [...COMMON, ...BASE_ONLY, ...CALCULATED_ONLY]
const CREATED = {
  base: ['columnType', ...COMMON, ...BASE_ONLY],
  calculated: ['columnType', ...COMMON, ...CALCULATED_ONLY],
} as const
const NOT_BASE = { sourceField: null, fhirPath: null, dataSourceId: null }
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
    baseColumns: rows.filter((c) => c.columnType === 'base').map(toColumnDto),
    calculatedColumns: rows.filter((c) => c.columnType === 'calculated').map(toColumnDto),
  }
}

/**
 * Creates a base column. `fhirPath` and `sourceField` are both stored, one defaulting to the other
 * (CONTRACT: Columns); a `dataSourceId` must name a data source of the same panel, else 404. The
 * FHIRPath itself is checked by the later engine, not here.
 */
export async function createBaseColumn(ctx: ServiceContext, panelId: number, input: CreateBaseColumnInput): Promise<ColumnDto> {
  const panel = await requirePanel(ctx, panelId)
  assertUniqueName(await panelColumns(ctx, panelId), input.name, panelId)
  if (input.fhirPath !== undefined) assertFhirPath(input.fhirPath)
  if (input.dataSourceId !== undefined) await requireDataSource(ctx, panelId, input.dataSourceId)
  const fhirPath = input.fhirPath ?? input.sourceField ?? null
  const { name, type, properties, metadata } = input
  return insertColumn(ctx, panel, {
    ...NOT_CALCULATED,
    columnType: 'base',
    name,
    type,
    sourceField: input.sourceField ?? fhirPath,
    fhirPath,
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
  const dependencies = checkFormula(input.formula, input.dependencies, input.name, existing)
  const { name, type, formula, properties, metadata } = input
  return insertColumn(ctx, panel, {
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
  options: { cascade?: boolean } = {},
): Promise<ColumnDto> {
  const before = await requireColumn(ctx, id)
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
      patch.dependencies = checkFormula(formula, input.dependencies, name, others)
    } else if (renamed) {
      checkFormula(formula, undefined, name, others)
    }
  } else {
    if (input.dataSourceId !== undefined) {
      if (input.dataSourceId !== null) await requireDataSource(ctx, before.panelId, input.dataSourceId)
      patch.dataSourceId = input.dataSourceId
    }
    if (input.fhirPath !== undefined && input.fhirPath !== null) assertFhirPath(input.fhirPath)
    applySourcePaths(before, input, patch)
  }

  const diff = diffFields(before, patch, TRACKED)
  if (Object.keys(diff).length === 0) return toColumnDto(before)
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
  return toColumnDto(row)
}

/**
 * Deletes a column; refused with 409 (listing them) while calculated columns reference it. Owners
 * of views that show it are told the change is breaking (COLUMN_CHANGED, breaking).
 */
export async function deleteColumn(ctx: ServiceContext, id: number): Promise<void> {
  const row = await requireColumn(ctx, id)
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

/** 400 naming `fhirPath` with the parser's message and 0-based position (issue: invalid FHIRPath). */
function assertFhirPath(expression: string) {
  const problem = checkFhirPath(expression)
  if (!problem) return
  throw invalid([{ path: 'fhirPath', message: problem.message }], problem.message)
}

const ownColumn = (ctx: ServiceContext, id: number) => and(eq(columns.id, id), eq(columns.tenantId, ctx.scope.tenantId))

const panelColumns = (ctx: ServiceContext, panelId: number): Promise<ColumnRow[]> =>
  ctx.db
    .select()
    .from(columns)
    .where(and(eq(columns.tenantId, ctx.scope.tenantId), eq(columns.panelId, panelId)))
    .orderBy(asc(columns.id))

/** The column if it is the tenant's and its panel is live and the caller's; else a 404 naming the column. */
async function requireColumn(ctx: ServiceContext, id: number): Promise<ColumnRow> {
  const [row] = await ctx.db.select().from(columns).where(ownColumn(ctx, id)).limit(1)
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

/** Names are unique within a panel (the docs are silent), so a `{Name}` reference names one column. */
function assertUniqueName(existing: ColumnRow[], name: string, panelId: number) {
  const clash = existing.find((c) => c.name === name)
  if (clash) {
    throw conflict(`A column named "${name}" already exists in panel ${panelId}; column names must be unique within a panel`, [
      { id: clash.id, name: clash.name },
    ])
  }
}

/** Calculated columns whose formula references `name`. */
const dependantsOf = (rows: ColumnRow[], name: string) =>
  rows.filter((c) => c.columnType === 'calculated' && c.formula && extractReferences(c.formula).some((r) => r.name === name))

const quoted = (names: string[]) => names.map((n) => `"${n}"`).join(', ')

/** 409 listing the dependants of a column that cannot be renamed or deleted (FORMULAS.md). */
const dependantsConflict = (name: string, found: ColumnRow[], hint: string) =>
  conflict(
    `Column "${name}" is referenced by calculated columns (${quoted(found.map((c) => c.name))}); ${hint}`,
    found.map(({ id, name }) => ({ id, name })),
  )

type Rewrite = { row: ColumnRow; patch: Pick<ColumnRow, 'formula' | 'dependencies'> }

/** A dependant's formula and dependencies with `{from}` renamed to `{to}` (a cascading rename). */
const renamedIn = (row: ColumnRow, from: string, to: string): Rewrite['patch'] => ({
  formula: renameReference(row.formula ?? '', from, to),
  dependencies: (row.dependencies ?? []).map((d) => (d === from ? to : d)),
})

/**
 * Runs the formula checks (one FORMULA_ERROR with every problem) and returns the dependencies to
 * store: the list sent, deduplicated, or the derived ones (columns, then source paths) when none was sent.
 */
function checkFormula(formula: string, dependencies: string[] | undefined, name: string, others: ColumnRow[]): string[] {
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
function assertFieldsOfKind(row: ColumnRow, input: UpdateColumnInput) {
  const issues: FieldIssue[] = []
  const foreign = row.columnType === 'base' ? CALCULATED_ONLY : BASE_ONLY
  for (const f of foreign) {
    if (input[f] !== undefined && input[f] !== null) issues.push({ path: f, message: `a ${row.columnType} column has no ${f}` })
  }
  if (issues.length > 0) throw invalid(issues)
}

/**
 * New fhirPath/sourceField of a base column. When only one is sent and the two were equal (one
 * defaulted to the other), both move; a pair left with nothing is a 400.
 */
function applySourcePaths(before: ColumnRow, input: UpdateColumnInput, patch: Partial<ColumnRow>) {
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
}

async function insertColumn(ctx: ServiceContext, panel: PanelDto, column: NewColumn): Promise<ColumnDto> {
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
  // libSQL reports the new id as `lastInsertRowid`; D1 (Workers) as `meta.last_row_id`.
  const newId = inserted.lastInsertRowid ?? (inserted as { meta?: { last_row_id?: number } }).meta?.last_row_id
  await recomputeAfterColumnChange(ctx, panel.id)
  await refreshRowIndex(ctx.db, ctx.scope.tenantId, panel.id)
  return toColumnDto({ ...values, id: Number(newId) })
}
