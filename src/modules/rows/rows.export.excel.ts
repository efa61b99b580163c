import { invalid } from '../../errors.ts'
import type { Push } from '../../http/push-stream.ts'
import { PipeSink } from './rows.export.pipe-sink.ts'
import type { ExportColumn, ExportTable } from './rows.export.types.ts'

type ExcelJs = typeof import('exceljs')

/** The library, loaded on first use (STYLE §12); a runtime without it gets a 400 naming the runtime. */
export async function loadExcelJs(runtime: string): Promise<ExcelJs> {
  try {
    const mod = (await import('exceljs')) as unknown as { default?: ExcelJs } & ExcelJs
    const lib = mod.default ?? mod
    if (!lib.stream?.xlsx?.WorkbookWriter) throw new Error('no streaming writer')
    return lib
  } catch {
    throw invalid(
      [{ path: 'format', message: `excel exports need the exceljs library, which cannot run on the ${runtime} runtime` }],
      `Excel exports are not available on the ${runtime} runtime; export as csv or json`,
    )
  }
}

/** A worksheet name Excel accepts: at most 31 characters, none of []:*?/\ */
const sheetName = (title: string) =>
  title
    .replace(/[[\]:*?/\\]/g, ' ')
    .trim()
    .slice(0, 31) || 'Export'

/**
 * A cell as Excel should hold it: numbers, booleans and texts ("" too) as such, dates as dates, lists
 * and objects as their JSON text (so `["blue"]` stays apart from `blue`, and `[]` from ""); null as
 * no cell.
 */
function excelValue(value: unknown, column: ExportColumn): unknown {
  if (value === null || value === undefined) return null
  if ((column.type === 'date' || column.type === 'datetime') && typeof value === 'string') {
    const d = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value)
    return Number.isNaN(d.getTime()) ? value : d
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'string') return value
  return JSON.stringify(value)
}

/**
 * xlsx through exceljs's streaming WorkbookWriter: each row is committed as it is written, and the
 * zip it produces goes through a Node-style sink (PipeSink, Web APIs only) whose chunks are handed
 * on after every batch of rows, so memory holds about one batch. A bold header row, and with
 * `includeFormulas` a second row with each calculated column's formula; dates as Excel dates.
 */
export async function writeExcel(table: ExportTable, push: Push, runtime: string): Promise<void> {
  const exceljs = await loadExcelJs(runtime)
  const pending: Uint8Array[] = []
  const sink = new PipeSink(
    (chunk) => pending.push(chunk),
    () => false,
  )
  const flush = async () => {
    for (const chunk of pending.splice(0)) await push(chunk)
  }
  const workbook = new exceljs.stream.xlsx.WorkbookWriter({ stream: sink as never, useStyles: true, useSharedStrings: false })
  workbook.creator = 'Panels API'
  workbook.created = table.exportedAt
  const sheet = workbook.addWorksheet(sheetName(table.title), {
    views: [{ state: 'frozen', ySplit: table.includeFormulas ? 2 : 1 }],
  })
  sheet.columns = table.columns.map((c) => ({
    key: c.name,
    width: Math.min(40, Math.max(10, c.name.length + 2)),
    style: c.type === 'date' ? { numFmt: 'yyyy-mm-dd' } : c.type === 'datetime' ? { numFmt: 'yyyy-mm-dd hh:mm:ss' } : {},
  }))
  const header = sheet.addRow(table.columns.map((c) => c.name))
  header.font = { bold: true }
  header.commit()
  if (table.includeFormulas) {
    const formulas = sheet.addRow(table.columns.map((c) => c.formula ?? ''))
    formulas.font = { italic: true }
    formulas.commit()
  }
  for await (const batch of table.batches) {
    for (const row of batch) sheet.addRow(table.columns.map((c) => excelValue(row[c.name], c))).commit()
    await flush()
  }
  sheet.commit()
  await workbook.commit()
  await flush()
}
