import { and, asc, eq, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { columns } from '../../db/schema.ts'
import { tooLarge } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { loadPanelPlan } from '../../rowstore/materialise.ts'
import { rowWrite, writeRows } from '../../rowstore/write.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { createBaseColumn } from '../columns/columns.service.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { decideImport } from './rows.import.decide.ts'
import { ensureCurrentCells } from './rows.import.match.ts'
import { readImportRows } from './rows.import.parse.ts'
import { checkSourceFields, prepareImport } from './rows.import.prepare.ts'
import type { ImportInput } from './rows.import.request.ts'
import { mapRows } from './rows.import.rows.ts'
import type { ImportReportDto, ImportRowErrorDto } from './rows.import.schemas.ts'
import { ensureImportSource, insertStatements, updateStatements } from './rows.import.write.ts'

/**
 * `POST /api/panels/{panelId}/import` (DATA-ENGINE: import; docs/import-export.md). The whole file
 * is read and checked first: a bad config, an unreadable file, a size over the limits or a mapped
 * field missing from the data fails the import as a whole and changes nothing. Then rows are
 * mapped, transformed and checked (required, unique, the target columns' types and validation
 * rules); rows with problems are rejected and reported, the others are stored — with their cells
 * computed — as records of the panel's `import` data source, inserted or (with `updateExisting`)
 * merged into the imported row their unique cells match (rows.import.decide.ts), in one `db.batch`
 * with the source's status and the change record.
 * Then the owners of other users' views of the panel hear how many rows entered or left them.
 */
export async function importIntoPanel(ctx: ServiceContext, panelId: number, input: ImportInput): Promise<ImportReportDto> {
  const panel = await requirePanel(ctx, panelId)
  noteAccess(ctx, { panelId: panel.id, query: { config: input.config } })
  const report = await runImport(ctx, panel, input)
  // The report speaks of every row read (by number, with its problems): the audit counts those.
  noteAccess(ctx, { dataSourceId: report.dataSourceId || undefined, rowCount: report.rowsRead })
  return report
}

async function runImport(
  ctx: ServiceContext,
  panel: Awaited<ReturnType<typeof requirePanel>>,
  input: ImportInput,
): Promise<ImportReportDto> {
  const panelId = panel.id
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
  if (prepared.unique.length > 0) await ensureCurrentCells(ctx, panelId)
  const plan = await loadPanelPlan(ctx.db, ctx.scope.tenantId, panelId)
  const { inserts, updates, imported, updated } = await decideImport(ctx, prepared, source, plan, mapped, now, errors)
  if (inserts.length + updates.length === 0) return finish(report, source.id, created)
  const at = isoNow(ctx.clock)
  const scope = { tenantId: ctx.scope.tenantId, panelId }
  const summary = {
    format: input.config.format,
    rowsRead: rows.length,
    rowsImported: imported,
    rowsUpdated: updated,
  }
  // One batch through the row store's write protocol: the rows with the views' membership step,
  // the source's status and the change record.
  await writeRows(ctx, {
    source: { id: source.id, ...scope },
    generation: source.generation,
    write: rowWrite({
      ...scope,
      actorId: ctx.scope.userId,
      cause: 'import',
      eventKey: `import:${crypto.randomUUID()}`,
      at,
      dataSourceId: source.id,
    }),
    now: at,
    own: {
      keys: inserts.map((r) => r.key),
      ids: updates.map((u) => u.id),
      statements: [
        ...insertStatements(scope, source, inserts, plan.version, at, prepared.batchSize),
        ...updateStatements(ctx.scope.tenantId, updates, plan.version, at, prepared.batchSize),
      ],
    },
    with: [
      sql`UPDATE data_sources SET sync_status = 'success', error_message = NULL, last_sync_at = ${at}, updated_at = ${at}
        WHERE id = ${source.id} AND tenant_id = ${ctx.scope.tenantId}`,
      changeInsert(ctx, {
        panelId,
        entityType: 'DataSource',
        entityId: source.id,
        action: 'UPDATE',
        changes: { import: { newValue: { ...summary, rowsRejected: rows.length - imported - updated } } },
      }),
    ],
  })
  report.rowsImported = imported
  report.rowsUpdated = updated
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
