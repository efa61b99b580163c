import ExcelJS from 'exceljs'
import Papa from 'papaparse'
import { describe, expect, it } from 'vitest'
import { pushStream } from '../../../src/http/push-stream.ts'
import { writeExcel } from '../../../src/modules/rows/rows.export.excel.ts'
import { PDF_MAX_ROWS, writePdf } from '../../../src/modules/rows/rows.export.pdf.ts'
import { writeCsv, writeJson } from '../../../src/modules/rows/rows.export.text.ts'
import type { ExportTable, FormatWriter } from '../../../src/modules/rows/rows.export.types.ts'

const COLUMNS = [
  { name: 'Name', type: 'text' },
  { name: 'Age', type: 'number' },
  { name: 'Born', type: 'date' },
  { name: 'Tags', type: 'multi_select' },
  { name: 'Age in months', type: 'number', formula: '{Age} * 12' },
]

function table(rowCount: number, extra: Partial<ExportTable> = {}): ExportTable {
  async function* batches() {
    for (let i = 0; i < rowCount; i += 100) {
      const batch = []
      for (let j = i; j < Math.min(rowCount, i + 100); j++) {
        batch.push({
          Name: `Patient ${j}`,
          Age: 20 + (j % 50),
          Born: '1990-02-03',
          Tags: ['a', 'b'],
          'Age in months': (20 + (j % 50)) * 12,
        })
      }
      yield batch
    }
  }
  return {
    title: 'Ward 3 / follow-up',
    exportedAt: new Date('2026-01-01T12:00:00Z'),
    columns: COLUMNS,
    includeFormulas: false,
    batches: batches(),
    ...extra,
  }
}

async function bytesOf(writer: FormatWriter, t: ExportTable): Promise<Uint8Array> {
  const errors: unknown[] = []
  const stream = pushStream(
    (push) => writer(t, push),
    (e) => errors.push(e),
  )
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer())
  expect(errors).toEqual([])
  return bytes
}

const text = (b: Uint8Array) => new TextDecoder().decode(b)

describe('csv export', () => {
  it('writes RFC 4180 rows that parse back, with formula injection neutralised', async () => {
    async function* batches() {
      yield [
        { Name: 'Smith, "Jo"\nJr', Age: -5, Born: null, Tags: [], 'Age in months': null },
        { Name: '=HYPERLINK("http://evil")', Age: 1, Born: '2000-01-01', Tags: ['+x'], 'Age in months': 12 },
        { Name: '@SUM(A1)', Age: 2, Born: null, Tags: null, 'Age in months': 24 },
      ]
    }
    const csv = text(await bytesOf(writeCsv, { ...table(0), batches: batches(), includeFormulas: true }))
    expect(csv.split('\r\n')[0]).toBe('Name,Age,Born,Tags,Age in months')
    const parsed = Papa.parse<string[]>(csv.trimEnd(), { newline: '\r\n' })
    expect(parsed.errors).toEqual([])
    expect(parsed.data).toEqual([
      ['Name', 'Age', 'Born', 'Tags', 'Age in months'],
      ['', '', '', '', '{Age} * 12'],
      ['Smith, "Jo"\nJr', '-5', '', '', ''],
      ['\'=HYPERLINK("http://evil")', '1', '2000-01-01', "'+x", '12'],
      ["'@SUM(A1)", '2', '', '', '24'],
    ])
  })
})

describe('json export', () => {
  it('streams an array of rows, or an object with formulas', async () => {
    const rows = JSON.parse(text(await bytesOf(writeJson, table(250))))
    expect(rows).toHaveLength(250)
    expect(rows[249]).toEqual({ Name: 'Patient 249', Age: 69, Born: '1990-02-03', Tags: ['a', 'b'], 'Age in months': 828 })
    const withFormulas = JSON.parse(text(await bytesOf(writeJson, table(3, { includeFormulas: true }))))
    expect(withFormulas).toMatchObject({ view: 'Ward 3 / follow-up', formulas: { 'Age in months': '{Age} * 12' } })
    expect(withFormulas.rows).toHaveLength(3)
    expect(JSON.parse(text(await bytesOf(writeJson, table(0))))).toEqual([])
  })
})

describe('excel export', () => {
  it('writes an xlsx that exceljs reads back, with typed cells and a formulas row', async () => {
    const bytes = await bytesOf((t, push) => writeExcel(t, push, 'node'), table(1200, { includeFormulas: true }))
    const workbook = new ExcelJS.Workbook()
    await workbook.xlsx.load(bytes.buffer as ArrayBuffer)
    const sheet = workbook.worksheets[0]
    expect(sheet.name).toBe('Ward 3   follow-up')
    expect(sheet.rowCount).toBe(1202)
    expect(sheet.getRow(1).values).toEqual([undefined, 'Name', 'Age', 'Born', 'Tags', 'Age in months'])
    expect(sheet.getRow(2).getCell(5).value).toBe('{Age} * 12')
    const last = sheet.getRow(1202)
    expect(last.getCell(1).value).toBe('Patient 1199')
    expect(last.getCell(2).value).toBe(69)
    expect(last.getCell(3).value).toEqual(new Date('1990-02-03T00:00:00Z'))
    // Lists are written as their JSON text since exact values (issue 10): `["a","b"]` stays a list of two.
    expect(last.getCell(4).value).toBe('["a","b"]')
  })
})

describe('pdf export', () => {
  const pages = (b: Uint8Array) => (new TextDecoder('latin1').decode(b).match(/\/Type \/Page\b/g) ?? []).length

  it('paginates the rows with the header on every page', async () => {
    const bytes = await bytesOf((t, push) => writePdf(t, push, 'node'), table(200))
    expect(text(bytes.subarray(0, 5))).toBe('%PDF-')
    // 200 rows at 14 pt on A4 landscape, under the title and header (34 rows a page) → 6 pages.
    expect(pages(bytes)).toBe(6)
    expect(pages(await bytesOf((t, push) => writePdf(t, push, 'node'), table(10)))).toBe(1)
  })

  it(`stops after ${PDF_MAX_ROWS} rows`, async () => {
    const bytes = await bytesOf((t, push) => writePdf(t, push, 'node'), table(PDF_MAX_ROWS + 50))
    expect(pages(bytes)).toBe(Math.ceil(PDF_MAX_ROWS / 34))
  }, 60_000)
})
