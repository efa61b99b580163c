import { inflateSync } from 'node:zlib'
import ExcelJS from 'exceljs'
import Papa from 'papaparse'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { exportBatching } from '../../../src/modules/rows/rows.export.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { baseColumn, createPanel, importRows } from './import.fixtures.ts'

/**
 * Exports stream in the view's order, the order its rows endpoint pages in: sort keys with their
 * direction, blanks (null and "") last unless nullsFirst, text case-insensitively, ties by record id,
 * across several keyset steps and batches (made small here).
 */

const FAMILIES = ['Moreau', 'berg', '', 'Weiss', 'Dubois', null, 'Berg', 'mensah', 'Weiss', '']
/** 33 rows: families repeat (ties, case variants, blanks), due dates with gaps, ranks with ties. */
const ROWS = Array.from({ length: 33 }, (_, i) => ({
  code: `r${String(i).padStart(2, '0')}`,
  ...(FAMILIES[i % FAMILIES.length] === null ? {} : { family: FAMILIES[i % FAMILIES.length] }),
  due: i % 4 === 0 ? '' : `2026-0${1 + (i % 3)}-1${i % 5}`,
  rank: i % 6,
}))

let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  exportBatching.rows = 4
  exportBatching.window = 9
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await createPanel(alice)
  await baseColumn(alice, panelId, { name: 'Code', sourceField: 'code' })
  await baseColumn(alice, panelId, { name: 'Family', sourceField: 'family' })
  await baseColumn(alice, panelId, { name: 'Due', sourceField: 'due', type: 'date' })
  await baseColumn(alice, panelId, { name: 'Rank', sourceField: 'rank', type: 'number' })
  const mapping = ['Code', 'Family', 'Due', 'Rank'].map((c) => ({ sourceField: c.toLowerCase(), targetColumn: c }))
  const imported = await importRows(t, panelId, { format: 'json', mapping }, ROWS)
  expect(imported.body.rowsImported).toBe(ROWS.length)
})

afterEach(() => {
  exportBatching.rows = 2000
  exportBatching.window = 100_000
})

async function createView(body: Record<string, unknown>): Promise<number> {
  const res = await alice.post('/api/views', {
    name: 'Ordered',
    panelId,
    config: { columns: ['Code', 'Family', 'Due', 'Rank'], groupBy: [], layout: 'table' },
    ...body,
  })
  expect(res.status).toBe(201)
  return res.body.id
}

/** The codes in the order the rows endpoint pages them (pages of 5, so paging is crossed too). */
async function pagedCodes(viewId: number): Promise<string[]> {
  const codes: string[] = []
  for (let page = 1; ; page++) {
    const res = await alice.get(`/api/views/${viewId}/rows?limit=5&page=${page}`)
    expect(res.status).toBe(200)
    const rows = res.body.data as { Code: string }[]
    codes.push(...rows.map((r) => r.Code))
    if (rows.length < 5) return codes
  }
}

async function download(viewId: number, format: string): Promise<Uint8Array> {
  const res = await t.app.request(`/api/views/${viewId}/export?format=${format}`, {
    headers: await authHeaders('tenant-a', 'alice'),
  })
  expect(res.status).toBe(200)
  return new Uint8Array(await res.arrayBuffer())
}

const text = (b: Uint8Array) => new TextDecoder().decode(b)

async function csvCodes(viewId: number): Promise<string[]> {
  const parsed = Papa.parse<Record<string, string>>(text(await download(viewId, 'csv')).trimEnd(), {
    header: true,
    newline: '\r\n',
  })
  return parsed.data.map((r) => r.Code)
}

async function jsonRows(viewId: number): Promise<Record<string, unknown>[]> {
  return JSON.parse(text(await download(viewId, 'json')))
}

async function excelCodes(viewId: number): Promise<string[]> {
  const workbook = new ExcelJS.Workbook()
  await workbook.xlsx.load((await download(viewId, 'excel')).buffer as ArrayBuffer)
  const sheet = workbook.worksheets[0]
  const codes: string[] = []
  for (let i = 2; i <= sheet.rowCount; i++) codes.push(String(sheet.getRow(i).getCell(1).value))
  return codes
}

/** The texts a pdfkit document draws, in drawing order: its content streams inflated, each TJ's hex strings decoded. */
function pdfTexts(bytes: Uint8Array): string[] {
  const raw = Buffer.from(bytes)
  const texts: string[] = []
  let at = 0
  for (;;) {
    const start = raw.indexOf('stream\n', at)
    if (start < 0) return texts
    const end = raw.indexOf('\nendstream', start)
    const body = raw.subarray(start + 'stream\n'.length, end)
    at = end
    // Page contents are deflated (zlib header 0x78); other streams (fonts, metadata) are skipped.
    if (body[0] !== 0x78) continue
    const content = inflateSync(body).toString('latin1')
    for (const tj of content.matchAll(/\[([^\]]*)\] TJ/g)) {
      texts.push([...tj[1].matchAll(/<([0-9a-f]*)>/g)].map((h) => Buffer.from(h[1], 'hex').toString('latin1')).join(''))
    }
  }
}

/** Rows sorted as the view's one key `Family desc` says: blanks last, case-insensitive, ties by import (record id) order. */
function familyDesc(): string[] {
  const blank = (r: (typeof ROWS)[number]) => r.family === undefined || r.family === ''
  return ROWS.map((r, i) => ({ r, i }))
    .sort((a, b) => {
      if (blank(a.r) !== blank(b.r)) return blank(a.r) ? 1 : -1
      const x = (a.r.family ?? '').toLowerCase()
      const y = (b.r.family ?? '').toLowerCase()
      return x === y ? a.i - b.i : x < y ? 1 : -1
    })
    .map(({ r }) => r.code)
}

describe('exports stream in the view order', () => {
  it('csv and json follow a desc sort: blanks last, case-insensitive ties by record id, across batches', async () => {
    const viewId = await createView({ sorting: [{ columnTitle: 'Family', direction: 'desc', priority: 1 }] })
    const expected = familyDesc()
    expect(expected.slice(0, 3)).toEqual(['r03', 'r08', 'r13'])
    expect(await pagedCodes(viewId)).toEqual(expected)
    expect(await csvCodes(viewId)).toEqual(expected)
    const json = await jsonRows(viewId)
    expect(json.map((r) => r.Code)).toEqual(expected)
    // Blanks last, "" and null together in id order: the exact values survive the reordering.
    expect(json.slice(-10).map((r) => r.Family)).toEqual(['', null, '', '', null, '', '', null, '', ''])
  })

  it('follows several keys with nullsFirst and a custom order, and a grouped view group by group', async () => {
    const sorted = await createView({
      sorting: [
        { columnTitle: 'Due', direction: 'asc', nullsFirst: true, priority: 1 },
        { columnTitle: 'Rank', direction: 'desc', priority: 2 },
      ],
    })
    const due = await csvCodes(sorted)
    expect(due).toEqual(await pagedCodes(sorted))
    // Blank due dates first (rows 0, 4, 8, …, ranks 0, 4, 2, …): rank 4 before 2 before 0, ties by id.
    expect(due.slice(0, 9)).toEqual(['r04', 'r16', 'r28', 'r08', 'r20', 'r32', 'r00', 'r12', 'r24'])
    const custom = await createView({
      sorting: [{ columnTitle: 'Family', direction: 'asc', customOrder: ['weiss', 'Dubois'], priority: 1 }],
    })
    const byCustom = (await jsonRows(custom)).map((r) => r.Code)
    expect(byCustom).toEqual(await pagedCodes(custom))
    expect(byCustom.slice(0, 5)).toEqual(['r03', 'r08', 'r13', 'r18', 'r23'])
    // A custom order of more than 20 values is one JSON parameter rather than a CASE (order.ts).
    const long = await createView({
      sorting: [
        {
          columnTitle: 'Family',
          direction: 'desc',
          customOrder: [...Array.from({ length: 20 }, (_, i) => `x${i}`), 'mensah'],
          priority: 1,
        },
      ],
    })
    const byLong = (await jsonRows(long)).map((r) => r.Code)
    expect(byLong).toEqual(await pagedCodes(long))
    expect(byLong.slice(0, 4)).toEqual(['r07', 'r17', 'r27', 'r03'])
    const grouped = await createView({
      config: { columns: ['Code', 'Family', 'Due', 'Rank'], groupBy: ['Rank'], layout: 'table' },
      sorting: [{ columnTitle: 'Family', direction: 'desc', priority: 1 }],
    })
    const groupedCodes = await csvCodes(grouped)
    expect(groupedCodes).toEqual(await pagedCodes(grouped))
    // Rank 0 first (rows 0, 6, 12, …): Weiss, Moreau twice (by id), Dubois, Berg, then the blank.
    expect(groupedCodes.slice(0, 6)).toEqual(['r18', 'r00', 'r30', 'r24', 'r06', 'r12'])
  })

  it.skipIf(onTarget(['workers', 'deno'], SKIP.sameProcess))(
    'gives the process a turn between batches, even to a reader in the same process',
    async () => {
      const viewId = await createView({ sorting: [{ columnTitle: 'Family', direction: 'asc' }] })
      const res = await t.app.request(`/api/views/${viewId}/export?format=csv`, {
        headers: await authHeaders('tenant-a', 'alice'),
      })
      expect(res.status).toBe(200)
      // Queued before the first read: it runs at the first turn the export gives the process.
      let turned = false
      setImmediate(() => {
        turned = true
      })
      const reader = (res.body as ReadableStream<Uint8Array>).getReader()
      let readAfterTurn = 0
      for (;;) {
        const { done } = await reader.read()
        if (done) break
        if (turned) readAfterTurn++
      }
      // Without the turns the whole export runs in promise callbacks, before any timer or socket.
      expect(readAfterTurn).toBeGreaterThan(0)
    },
  )

  it.skipIf(onTarget('workers', SKIP.workersXlsx))('excel follows the view order', async () => {
    const viewId = await createView({ sorting: [{ columnTitle: 'Family', direction: 'desc', priority: 1 }] })
    expect(await excelCodes(viewId)).toEqual(familyDesc())
  })

  it.skipIf(onTarget('workers', SKIP.workersPdf))('pdf draws the rows in the view order', async () => {
    const viewId = await createView({ sorting: [{ columnTitle: 'Family', direction: 'desc', priority: 1 }] })
    const codes = pdfTexts(await download(viewId, 'pdf')).filter((s) => /^r\d\d$/.test(s))
    expect(codes).toEqual(familyDesc())
  })

  it('a view without a sort still exports in record id order', async () => {
    const viewId = await createView({})
    expect(await csvCodes(viewId)).toEqual(ROWS.map((r) => r.code))
  })
})
