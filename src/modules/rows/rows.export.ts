import { and, eq, inArray } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { columns, type FilterCriterion } from '../../db/schema.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import { type FieldIssue, forbidden, invalid } from '../../errors.ts'
import { pushStream } from '../../http/push-stream.ts'
import { readRowBatches } from '../../rowstore/member-page.ts'
import { noteAccess, streamAccess } from '../audit/audit.record.ts'
import { prepareViewRows } from '../views/views.query.ts'
import { rowLimitsFor } from '../views/views.rows-scope.ts'
import { loadVisibleView, requireViewPermission } from '../views/views.service.ts'
import { loadExcelJs, writeExcel } from './rows.export.excel.ts'
import { loadPdfKit, PDF_MAX_ROWS, writePdf } from './rows.export.pdf.ts'
import { type DateRange, dateRangeOf, type ExportQueryInput } from './rows.export.schemas.ts'
import { writeCsv, writeJson } from './rows.export.text.ts'
import { CONTENT_TYPES, EXTENSIONS, type ExportColumn, type ExportFormat, type FormatWriter } from './rows.export.types.ts'

/**
 * How an export reads its rows (member-page.ts `readRowBatches`): rows per batch, and, for a sorted view, ids
 * per keyset step (each step sorts the rows in scope once). Tests make them small to cross several.
 */
export const exportBatching = { rows: 2000, window: 100_000 }

export interface ExportDownload {
  body: ReadableStream<Uint8Array>
  contentType: string
  filename: string
}

/**
 * `GET /api/views/{viewId}/export` (DATA-ENGINE: export; docs/import-export.md): every row of the
 * view (its filters, the panel's cohort rule, its columns), narrowed by `dateRange`, up to
 * `maxRows`, streamed in the view's order (the order its rows endpoint pages in: groups, sorts,
 * blanks, ties by record id) batch by batch through the format's writer, gzip-compressed
 * on request. The view must be readable by the caller (404 otherwise); a published view of
 * someone else whose `publishConfig.allowDownload` is false is a 403. Problems with the query are
 * found before the download starts, so they are ordinary 400s.
 */
export async function exportView(ctx: ServiceContext, viewId: number, q: ExportQueryInput): Promise<ExportDownload> {
  const loaded = await loadVisibleView(ctx, viewId)
  const view = loaded.row
  noteAccess(ctx, { panelId: view.panelId, viewId: view.id })
  requireViewPermission(loaded, 'read', 'export its rows')
  if (!loaded.access.canDownload) {
    throw forbidden(`Downloads of view ${viewId} are turned off by its publisher (publishConfig.allowDownload)`)
  }
  const limits = await rowLimitsFor(ctx, loaded)
  const first = await prepareViewRows(ctx, view, {}, limits)
  const range = dateRangeOf(q)
  const filters = range ? [dateFilter(range, first.visible)] : []
  const prepared = filters.length > 0 ? await prepareViewRows(ctx, view, { filters }, limits) : first
  const exportColumns = await withFormulas(ctx, prepared.visible)
  const batches =
    q.includeData === false
      ? (async function* () {})()
      : readRowBatches(ctx, prepared, { batchSize: exportBatching.rows, windowSize: exportBatching.window, maxRows: q.maxRows })
  const writer = writerFor(q.format, ctx.runtime)
  // The library of a binary format is loaded before the response starts: a runtime without it is a 400.
  if (q.format === 'excel') await loadExcelJs(ctx.runtime)
  if (q.format === 'pdf') await loadPdfKit(ctx.runtime)
  // From here on nothing is refused: the access record is written when the stream ends, with the rows it carried.
  const audit = streamAccess(ctx, batches, q.format === 'pdf' ? PDF_MAX_ROWS : undefined)
  const table = {
    title: view.name,
    exportedAt: ctx.clock.now(),
    columns: exportColumns,
    includeFormulas: q.includeFormulas === true,
    batches: audit.batches,
  }
  let body = pushStream(
    (push) => audit.run(() => writer(table, push)),
    (err) => ctx.log.error('export failed after it started', { viewId, format: q.format, error: (err as Error)?.message }),
  )
  const gzip = q.compression === 'gzip'
  if (gzip) body = body.pipeThrough(new CompressionStream('gzip') as unknown as TransformStream<Uint8Array, Uint8Array>)
  const filename = `${slug(view.name)}-${stamp(table.exportedAt)}.${EXTENSIONS[q.format]}${gzip ? '.gz' : ''}`
  return { body, contentType: gzip ? 'application/gzip' : CONTENT_TYPES[q.format], filename }
}

/** `attachment; filename="…"; filename*=UTF-8''…` */
export const contentDisposition = (filename: string) =>
  `attachment; filename="${filename.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(filename)}`

// --- Internal helpers ---

function writerFor(format: ExportFormat, runtime: string): FormatWriter {
  switch (format) {
    case 'csv':
      return writeCsv
    case 'json':
      return writeJson
    case 'excel':
      return (t, push) => writeExcel(t, push, runtime)
    case 'pdf':
      return (t, push) => writePdf(t, push, runtime)
  }
}

/**
 * The filter of a date range: `column` (default: the first date or date-time column the view
 * shows), from `start` to `end`, both inclusive (a date-only end includes that whole day).
 */
function dateFilter(range: DateRange, visible: { name: string; kind: string }[]): FilterCriterion {
  const issues: FieldIssue[] = []
  const column = range.column ?? visible.find((c) => c.kind === 'date' || c.kind === 'datetime')?.name
  if (!column)
    issues.push({ path: 'dateRange[column]', message: 'required: the view shows no date column to apply the range to' })
  if (range.start === undefined && range.end === undefined)
    issues.push({ path: 'dateRange', message: 'needs start, end or both' })
  if (range.start && range.end && Date.parse(range.start) > Date.parse(range.end)) {
    issues.push({ path: 'dateRange[end]', message: 'must not be before dateRange[start]' })
  }
  if (issues.length > 0) throw invalid(issues, 'Invalid dateRange')
  const columnTitle = column!
  if (range.start !== undefined && range.end !== undefined)
    return { columnTitle, operator: 'between', value: [range.start, range.end] }
  if (range.start !== undefined) return { columnTitle, operator: 'greaterThanOrEqual', value: range.start }
  return { columnTitle, operator: 'lessThanOrEqual', value: range.end }
}

/**
 * The exported columns with their declared types and, for calculated ones, their formulas; a
 * virtual column of the work state (docs/worklist.md) has its kind as its type (`_dueAt` a datetime).
 */
async function withFormulas(ctx: ServiceContext, visible: ColumnRef[]): Promise<ExportColumn[]> {
  if (visible.length === 0) return []
  const rows = await ctx.db
    .select({ id: columns.id, type: columns.type, formula: columns.formula })
    .from(columns)
    .where(
      and(
        eq(columns.tenantId, ctx.scope.tenantId),
        inArray(
          columns.id,
          visible.map((c) => c.id),
        ),
      ),
    )
  const byId = new Map(rows.map((r) => [r.id, r]))
  return visible.map((c) => ({
    name: c.name,
    type: byId.get(c.id)?.type ?? (c.virtual ? c.kind : 'text'),
    formula: byId.get(c.id)?.formula ?? null,
  }))
}

const slug = (name: string) =>
  name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .toLowerCase()
    .slice(0, 60) || 'view'

const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
