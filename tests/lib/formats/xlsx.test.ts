import fs from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { PassThrough } from 'node:stream'
import ExcelJS from 'exceljs'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { FormatError } from '../../../src/lib/formats/errors.ts'
import { cellValue, xlsxBatches } from '../../../src/lib/formats/xlsx.ts'
import { chunked, collect, failure, utf8 } from './helpers.ts'

async function workbook(build: (wb: ExcelJS.Workbook) => void): Promise<Uint8Array> {
  const wb = new ExcelJS.Workbook()
  build(wb)
  return new Uint8Array(await wb.xlsx.writeBuffer())
}

const twoSheets = () =>
  workbook((wb) => {
    const first = wb.addWorksheet('Patients')
    first.addRow(['Report of January'])
    first.addRow([])
    first.addRow(['id', 'born', 'score', 'label', 'site'])
    first.addRow([
      'p1',
      new Date('1990-05-17T00:00:00Z'),
      { formula: '2*3', result: 6 },
      { richText: [{ text: 'very ' }, { font: { bold: true }, text: 'ill' }] },
      { text: 'clinic', hyperlink: 'https://example.org' },
    ])
    first.addRow(['p2', null, { formula: '1/0', result: { error: '#DIV/0!' } }, 'ok', { error: '#N/A' }])
    const second = wb.addWorksheet('Labs')
    second.addRow(['code', 'value'])
    second.addRow(['hb', 13.5])
  })

/** A workbook from exceljs's streaming writer: its worksheets come before the shared strings and the workbook part. */
async function streamedWorkbook(rows: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  const out = new PassThrough()
  out.on('data', (c: Uint8Array) => chunks.push(c))
  const writer = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useSharedStrings: true })
  const sheet = writer.addWorksheet('Big')
  sheet.addRow(['n', 'label']).commit()
  for (let i = 0; i < rows; i++) sheet.addRow([i, `row ${i}`]).commit()
  sheet.commit()
  await writer.commit()
  return new Uint8Array(Buffer.concat(chunks))
}

/** exceljs's temporary files of this test process (the `tmp` package names them `tmp-<pid>-<random>`). */
const TEMP = new RegExp(`^tmp-${process.pid}-`)
const tempFiles = () => fs.readdirSync(tmpdir()).filter((f) => TEMP.test(f))

/**
 * Makes the opening of exceljs's temporary files with `flags` ('w': spooling a worksheet, 'r': reading
 * it back) take `ms` longer, as it does now and then on a loaded machine: the races it takes part in
 * then go the wrong way every time instead of once in a few hundred reads.
 */
function slowTempFileOpens(flags: 'r' | 'w', ms = 40) {
  const open = fs.open
  vi.spyOn(fs, 'open').mockImplementation(((path: fs.PathLike, ...rest: unknown[]) => {
    const slow = typeof path === 'string' && rest[0] === flags && TEMP.test(basename(path))
    if (slow) setTimeout(() => (open as (...a: unknown[]) => void)(path, ...rest), ms)
    else (open as (...a: unknown[]) => void)(path, ...rest)
  }) as never)
}

afterEach(() => {
  vi.restoreAllMocks()
})

// A workbook found unreadable partway leaves the files exceljs spooled before the error until the
// process exits, and vitest's workers end without running `tmp`'s clean-up on exit: the ones of this
// test file's process (no other file runs in it meanwhile) are removed here, not left in /tmp.
afterAll(() => {
  for (const f of tempFiles()) fs.rmSync(join(tmpdir(), f), { force: true })
})

const read = async (bytes: Uint8Array, options: Parameters<typeof xlsxBatches>[1] = {}) =>
  (await collect(xlsxBatches(chunked(bytes, 4096), options))).flat()

describe('xlsxBatches', () => {
  it('reads the first sheet by default, header after skipRows, cell values normalised', async () => {
    expect(await read(await twoSheets(), { skipRows: 2 })).toEqual([
      { id: 'p1', born: '1990-05-17T00:00:00.000Z', score: 6, label: 'very ill', site: 'clinic' },
      // exceljs's stream reader reads a formula's error result as NaN: no value rather than a wrong one.
      { id: 'p2', born: null, score: null, label: 'ok', site: '#N/A' },
    ])
  })

  it('selects a sheet by sheetName or 0-based sheetIndex', async () => {
    const bytes = await twoSheets()
    expect(await read(bytes, { sheetName: 'Labs' })).toEqual([{ code: 'hb', value: 13.5 }])
    expect(await read(bytes, { sheetIndex: 1 })).toEqual([{ code: 'hb', value: 13.5 }])
  })

  it('names columns column1..N without headers', async () => {
    expect(await read(await twoSheets(), { sheetName: 'Labs', hasHeaders: false })).toEqual([
      { column1: 'code', column2: 'value' },
      { column1: 'hb', column2: 13.5 },
    ])
  })

  it('names the sheets there are when the configured one is missing', async () => {
    const err = await failure(xlsxBatches(chunked(await twoSheets(), 4096), { sheetName: 'Nope' }))
    expect(err).toBeInstanceOf(FormatError)
    expect(err.message).toBe("The workbook has no sheet named 'Nope'; its sheets are 'Patients', 'Labs'")
  })

  it('streams a workbook written by the streaming writer, in batches', async () => {
    const bytes = await streamedWorkbook(2500)
    const batches = await collect(xlsxBatches(chunked(bytes, 8192), { batchSize: 1000 }))
    expect(batches.map((b) => b.length)).toEqual([1000, 1000, 500])
    expect(batches[2][499]).toEqual({ n: 2499, label: 'row 2499' })
  })

  it('refuses a file that is not a workbook, or a truncated one', async () => {
    const notZip = await failure(xlsxBatches(chunked(utf8('id,name\n1,Ada\n'.repeat(20))), {}))
    expect(notZip).toBeInstanceOf(FormatError)
    expect(notZip.message).toMatch(/^The file is not a readable xlsx workbook/)
    const bytes = await twoSheets()
    const cut = await failure(xlsxBatches(chunked(bytes.subarray(0, Math.floor(bytes.length / 2)), 1024), {}))
    expect(cut.message).toMatch(/^The file is not a readable xlsx workbook/)
  })
})

describe('xlsxBatches and the temporary files exceljs spools worksheets to', () => {
  it('reads the parts stored after a spooled worksheet even when spooling is slower than unzipping', async () => {
    // The shared strings, styles and workbook part follow the worksheet; they used to be dropped when
    // the zip parser got to its end before the worksheet was on disk (exceljs#3064): `{"sharedString":0}`
    // headers, or "Cannot read properties of undefined (reading 'sheets')".
    slowTempFileOpens('w')
    expect(await read(await streamedWorkbook(3))).toEqual([
      { n: 0, label: 'row 0' },
      { n: 1, label: 'row 1' },
      { n: 2, label: 'row 2' },
    ])
  })

  it('lets go of the worksheets it passes over, so their temporary files going away crash nothing', async () => {
    // exceljs opens a read stream on each spooled worksheet and deletes the file as soon as the next
    // worksheet is asked for; a worksheet passed over had a stream nobody listened to, whose open
    // could fail with ENOENT after the delete: an uncaught error.
    slowTempFileOpens('r')
    const stray: unknown[] = []
    const onStray = (err: unknown) => stray.push(err)
    process.on('uncaughtException', onStray)
    try {
      const bytes = await twoSheets()
      expect(await read(bytes, { sheetName: 'Labs' })).toEqual([{ code: 'hb', value: 13.5 }])
      expect((await failure(xlsxBatches(chunked(bytes, 4096), { sheetName: 'Nope' }))).message).toMatch(/no sheet named 'Nope'/)
      await new Promise((resolve) => setTimeout(resolve, 100))
    } finally {
      process.off('uncaughtException', onStray)
    }
    expect(stray).toEqual([])
  })

  it('leaves no temporary file behind once a read is over, whichever sheet it read and however it stopped', async () => {
    const before = tempFiles().length
    const bytes = await twoSheets()
    await read(bytes)
    await read(bytes, { sheetName: 'Labs' })
    await failure(xlsxBatches(chunked(bytes, 4096), { sheetName: 'Nope' }))
    for await (const batch of xlsxBatches(chunked(await streamedWorkbook(2500), 8192), { batchSize: 1000 })) {
      expect(batch).toHaveLength(1000)
      break
    }
    // exceljs removes a file asynchronously (close, then unlink)
    for (let i = 0; i < 50 && tempFiles().length > before; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(tempFiles()).toHaveLength(before)
  })
})

describe('cellValue', () => {
  it('turns exceljs cell values into JSON values', () => {
    expect(cellValue(undefined)).toBeNull()
    expect(cellValue(new Date('2026-01-02T03:04:05Z'))).toBe('2026-01-02T03:04:05.000Z')
    expect(cellValue({ sharedFormula: 'A1', result: 'x' })).toBe('x')
    expect(cellValue({ formula: 'A1' })).toBeNull()
    expect(cellValue(true)).toBe(true)
    expect(cellValue(Number.NaN)).toBeNull()
  })
})
