import { invalid } from '../../errors.ts'
import type { Push } from '../../http/push-stream.ts'
import { cellText } from './rows.export.text.ts'
import type { ExportTable } from './rows.export.types.ts'

/** Rows one PDF holds; past it the document says where it stopped (never silently). */
export const PDF_MAX_ROWS = 10_000

/** The parts of a pdfkit document used here. */
interface PdfDoc {
  page: { width: number; height: number }
  on(event: string, listener: (chunk?: Uint8Array) => void): void
  addPage(): PdfDoc
  font(name: string): PdfDoc
  fontSize(size: number): PdfDoc
  fillColor(color: string): PdfDoc
  rect(x: number, y: number, w: number, h: number): PdfDoc
  fill(color?: string): PdfDoc
  text(text: string, x: number, y: number, options?: Record<string, unknown>): PdfDoc
  end(): void
}
type PdfKit = new (options: Record<string, unknown>) => PdfDoc

/**
 * The library, loaded on first use. A runtime or build where it cannot run — it cannot load, or
 * its standard fonts (read from its package files) are missing, as in a single-file bundle — gets a
 * 400 naming the runtime before any byte is sent.
 */
export async function loadPdfKit(runtime: string): Promise<PdfKit> {
  try {
    const mod = (await import('pdfkit')) as unknown as { default?: PdfKit; registerStdFonts?: (...fonts: unknown[]) => void }
    const PDFDocument = (mod.default ?? mod) as PdfKit
    if (typeof PDFDocument !== 'function') throw new Error('no pdfkit here')
    // pdfkit's browser build (the Node bundle and Workers use it) reads no files: its standard
    // fonts are registered from their own modules. Its Node build loads them by itself.
    if (typeof mod.registerStdFonts === 'function') {
      const fonts = await Promise.all([
        import('pdfkit/standard-fonts/Helvetica'),
        import('pdfkit/standard-fonts/HelveticaBold'),
        import('pdfkit/standard-fonts/HelveticaOblique'),
      ])
      mod.registerStdFonts(...fonts.map((f) => (f as { default: unknown }).default))
    }
    new PDFDocument({ autoFirstPage: false }).font('Helvetica').font('Helvetica-Bold').font('Helvetica-Oblique')
    return PDFDocument
  } catch {
    throw invalid(
      [
        {
          path: 'format',
          message: `pdf exports need the pdfkit library and its fonts, which are not available on the ${runtime} runtime`,
        },
      ],
      `PDF exports are not available on the ${runtime} runtime; export as csv, json or excel`,
    )
  }
}

const MARGIN = 30
const ROW_HEIGHT = 14
const FONT_SIZE = 7.5

/**
 * A readable paginated table (pdfkit, A4 landscape): on every page the view's name, the export
 * time and the page number, then the header row (and with `includeFormulas` the formulas) before
 * the rows; cells that do not fit end with an ellipsis. Pages are flushed as they fill and handed
 * on after every batch. At most PDF_MAX_ROWS rows; a longer export ends with a line saying so.
 */
export async function writePdf(table: ExportTable, push: Push, runtime: string): Promise<void> {
  const PDFDocument = await loadPdfKit(runtime)
  const doc = new PDFDocument({ size: 'A4', layout: 'landscape', margin: MARGIN, bufferPages: false, autoFirstPage: false })
  const pending: Uint8Array[] = []
  const ended = new Promise<void>((resolve) => doc.on('end', () => resolve()))
  doc.on('data', (chunk) => pending.push(new Uint8Array(chunk!)))
  const flush = async () => {
    for (const chunk of pending.splice(0)) await push(chunk)
  }
  const names = table.columns.map((c) => c.name)
  let page = 0
  let y = 0
  let width = 0
  let bottom = 0
  const columnWidth = () => (width - 2 * MARGIN) / Math.max(1, names.length)

  const rowOf = (cells: string[], style: { bold?: boolean; shade?: string } = {}) => {
    const w = columnWidth()
    if (style.shade) doc.rect(MARGIN, y, width - 2 * MARGIN, ROW_HEIGHT).fill(style.shade)
    doc
      .fillColor('#000000')
      .font(style.bold ? 'Helvetica-Bold' : 'Helvetica')
      .fontSize(FONT_SIZE)
    cells.forEach((text, i) => {
      doc.text(text, MARGIN + i * w + 2, y + 3.5, { width: w - 4, height: ROW_HEIGHT, lineBreak: false, ellipsis: true })
    })
    y += ROW_HEIGHT
  }
  const newPage = () => {
    doc.addPage()
    page++
    width = doc.page.width
    bottom = doc.page.height - MARGIN
    y = MARGIN
    doc.font('Helvetica-Bold').fontSize(12).fillColor('#000000').text(table.title, MARGIN, y, { lineBreak: false })
    doc
      .font('Helvetica')
      .fontSize(8)
      .fillColor('#555555')
      .text(`Exported ${table.exportedAt.toISOString()} · page ${page}`, MARGIN, y + 16, { lineBreak: false })
    y += 32
    rowOf(names, { bold: true, shade: '#e6e6e6' })
    if (table.includeFormulas)
      rowOf(
        table.columns.map((c) => (c.formula ? `= ${c.formula}` : '')),
        { shade: '#f3f3f3' },
      )
  }

  newPage()
  let written = 0
  let stopped = false
  for await (const batch of table.batches) {
    for (const row of batch) {
      if (written === PDF_MAX_ROWS) {
        stopped = true
        break
      }
      if (y + ROW_HEIGHT > bottom) newPage()
      rowOf(
        names.map((n) => cellText(row[n])),
        written % 2 === 1 ? { shade: '#fafafa' } : {},
      )
      written++
    }
    await flush()
    if (stopped) break
  }
  if (stopped || written === 0) {
    if (y + ROW_HEIGHT > bottom) newPage()
    const note = stopped
      ? `The PDF stops after ${PDF_MAX_ROWS} rows; export as csv or excel for every row.`
      : 'No rows match this view.'
    doc
      .font('Helvetica-Oblique')
      .fontSize(FONT_SIZE)
      .fillColor('#555555')
      .text(note, MARGIN, y + 4, { lineBreak: false })
  }
  doc.end()
  await ended
  await flush()
}
