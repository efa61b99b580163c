import { and, asc, eq, sql } from 'drizzle-orm'
import { columns } from '../../db/schema.ts'
import { tooLarge } from '../../errors.ts'
import type { ServiceContext } from '../../http/context.ts'
import { isoNow } from '../../lib/clock.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { createBaseColumn } from '../columns/columns.service.ts'
import { notifyViewMembershipChanges, snapshotViewMembership } from '../notifications/notifications.membership.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { readImportRows } from './rows.import.parse.ts'
import { checkSourceFields, type PreparedImport, prepareImport } from './rows.import.prepare.ts'
import type { ImportInput } from './rows.import.request.ts'
import { type MappedRow, mapRows } from './rows.import.rows.ts'
import type { ImportReportDto, ImportRowErrorDto } from './rows.import.schemas.ts'
import {
  contentKeys,
  ensureImportSource,
  existingByKey,
  type ImportSource,
  idsByKey,
  insertStatements,
  type StoredRow,
  updateStatements,
} from './rows.import.write.ts'
import { loadPanelPlan, type PanelPlan, prepareRows, rowOf } from './rows.materialise.ts'

/**
 * `POST /api/panels/{panelId}/import` (DATA-ENGINE: import; docs/import-export.md). The whole file
 * is read and checked first: a bad config, an unreadable file, a size over the limits or a mapped
 * field missing from the data fails the import as a whole and changes nothing. Then rows are
 * mapped, transformed and checked (required, unique, the target columns' types and validation
 * rules); rows with problems are rejected and reported, the others are stored — with their cells
 * computed — as records of the panel's `import` data source, inserted or (with `updateExisting`)
 * updated by their unique key, in one `db.batch` with the source's status and the change record.
 * Then the owners of other users' views of the panel hear how many rows entered or left them.
 */
export async function importIntoPanel(ctx: ServiceContext, panelId: number, input: ImportInput): Promise<ImportReportDto> {
  const panel = await requirePanel(ctx, panelId)
  const { maxBytes, maxRows } = ctx.config.importLimits
  const own = input.config.validation.maxFileSize
  if (own !== undefined && input.size > own) {
    throw tooLarge(`The data is ${input.size} bytes, more than validation.maxFileSize (${own} bytes)`)
  }
  if (input.size > maxBytes) throw tooLarge(`Imports are limited to ${maxBytes} bytes (IMPORT_MAX_BYTES)`)
  const prepared = await prepareImport(input.config, await columnsOf(ctx, panelId), panelId)
  const rows = await readImportRows(input, maxRows)
  checkSourceFields(prepared, rows)

  const now = ctx.clock.now()
  const errors: ImportRowErrorDto[] = []
  const mapped = await mapRows(prepared, rows, now, errors)
  const report = { rowsRead: rows.length, rowsImported: 0, rowsUpdated: 0, rowsRejected: 0, errors }
  if (mapped.length === 0) return finish(report, 0, [])

  const source = await ensureImportSource(ctx, panelId, panel.userId)
  const created: string[] = []
  for (const name of prepared.missing) {
    await createBaseColumn(ctx, panelId, {
      name,
      type: 'text',
      sourceField: name,
      dataSourceId: source.id,
      properties: {},
      metadata: {},
    })
    created.push(name)
  }
  const plan = await loadPanelPlan(ctx.db, ctx.scope.tenantId, panelId)
  const { inserts, updates } = await decide(ctx, prepared, source, plan, mapped, now, errors)
  if (inserts.length + updates.length === 0) return finish(report, source.id, created)
  const before = await snapshotViewMembership(
    ctx,
    panelId,
    updates.map((u) => u.id),
  )

  const at = isoNow(ctx.clock)
  const scope = { tenantId: ctx.scope.tenantId, panelId }
  const summary = {
    format: input.config.format,
    rowsRead: rows.length,
    rowsImported: inserts.length,
    rowsUpdated: updates.length,
  }
  await ctx.db.batch([
    ctx.db.run(sql`
      UPDATE data_sources SET sync_status = 'success', error_message = NULL, last_sync_at = ${at}, updated_at = ${at}
      WHERE id = ${source.id} AND tenant_id = ${ctx.scope.tenantId}`),
    ...insertStatements(scope, source, inserts, plan.version, at, prepared.batchSize).map((s) => ctx.db.run(s)),
    ...updateStatements(ctx.scope.tenantId, updates, plan.version, at, prepared.batchSize).map((s) => ctx.db.run(s)),
    changeInsert(ctx, {
      panelId,
      entityType: 'DataSource',
      entityId: source.id,
      action: 'UPDATE',
      changes: { import: { newValue: { ...summary, rowsRejected: rows.length - inserts.length - updates.length } } },
    }),
  ])
  report.rowsImported = inserts.length
  report.rowsUpdated = updates.length
  const ids = await writtenIds(ctx, source, inserts, updates)
  await notifyViewMembershipChanges(ctx, panelId, before, `import:${crypto.randomUUID()}`, { ids, cause: 'import' })
  return finish(report, source.id, created)
}

// --- Internal helpers ---

function finish(report: Omit<ImportReportDto, 'dataSourceId' | 'columnsCreated'>, dataSourceId: number, created: string[]) {
  report.errors.sort((a, b) => a.row - b.row)
  const rejected = new Set(report.errors.map((e) => e.row)).size
  return { ...report, rowsRejected: rejected, dataSourceId, columnsCreated: created }
}

const columnsOf = (ctx: ServiceContext, panelId: number) =>
  ctx.db
    .select({ name: columns.name, columnType: columns.columnType })
    .from(columns)
    .where(and(eq(columns.tenantId, ctx.scope.tenantId), eq(columns.panelId, panelId)))
    .orderBy(asc(columns.id))

/**
 * Decides each mapped row: a duplicate of an earlier row of the file, or of a stored row without
 * `updateExisting`, is rejected; a stored row is updated (its data merged with the mapped values);
 * the cells are computed, and a row whose mapped columns fail their type or validation rules is
 * rejected with those messages.
 */
async function decide(
  ctx: ServiceContext,
  prepared: PreparedImport,
  source: ImportSource,
  plan: PanelPlan,
  mapped: MappedRow[],
  now: Date,
  errors: ImportRowErrorDto[],
) {
  const targets = new Set(prepared.mappings.map((m) => m.target))
  const keyed = prepared.unique.length > 0
  const existing = keyed
    ? await existingByKey(
        ctx.db,
        source,
        mapped.map((r) => r.key!),
      )
    : new Map()
  // A stored row's data merges into the mapped data: the cells may read either.
  await prepareRows(plan, [...mapped.map((r) => r.data), ...[...existing.values()].map((s) => s.data)])
  const firstRow = new Map<string, number>()
  const accepted: (MappedRow & { id?: number; stored: StoredRow })[] = []
  for (const row of mapped) {
    let data = row.data
    let id: number | undefined
    if (keyed) {
      const key = row.key!
      const earlier = firstRow.get(key)
      if (earlier !== undefined) {
        errors.push({ row: row.n, field: prepared.unique[0], message: `duplicate of row ${earlier} (${row.label})` })
        continue
      }
      const stored = existing.get(key)
      if (stored && !prepared.updateExisting) {
        errors.push({
          row: row.n,
          field: prepared.unique[0],
          message: `a row with ${row.label} already exists (set options.updateExisting to update it)`,
        })
        continue
      }
      if (stored) {
        data = { ...stored.data, ...row.data }
        id = stored.id
      }
    }
    const cells = rowOf(plan, source.id, data, now)
    const bad = cells.errors.filter((e) => targets.has(e.column))
    if (bad.length > 0) {
      for (const e of bad) errors.push({ row: row.n, field: e.column, message: e.message })
      continue
    }
    if (keyed) firstRow.set(row.key!, row.n)
    const stored = { key: row.key ?? '', data, cells: cells.cells, errors: cells.errors.length > 0 ? cells.errors : null }
    accepted.push({ ...row, id, stored })
  }
  if (!keyed) {
    const keys = await contentKeys(
      ctx,
      source,
      accepted.map((a) => a.stored),
    )
    accepted.forEach((a, i) => {
      a.stored.key = keys[i]
    })
  }
  return {
    inserts: accepted.filter((a) => a.id === undefined).map((a) => a.stored),
    updates: accepted.filter((a) => a.id !== undefined).map((a) => ({ ...a.stored, id: a.id! })),
  }
}

/** Ids of the records an import wrote (inserted ones found by key). */
async function writtenIds(ctx: ServiceContext, source: ImportSource, inserts: StoredRow[], updates: { id: number }[]) {
  const ids = updates.map((u) => u.id)
  ids.push(
    ...(await idsByKey(
      ctx.db,
      source,
      inserts.map((r) => r.key),
    )),
  )
  return ids
}
