import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ExcelJS from 'exceljs'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { createSource, currentRecords } from '../datasources/fixtures.ts'
import { query } from './fixtures.ts'
import { baseColumn, createPanel, importFile } from './import.fixtures.ts'

/**
 * A typed column converts text, and an empty text has no value in it (issue 20 item 5;
 * docs/views-and-rows.md "Exact values"): a blank field of a CSV, TSV or XLSX source or import in a
 * number, boolean, date or datetime column is null, so `isNull` finds it, while a text column keeps
 * `""` and the stored record keeps the field exactly as the file gave it.
 */

let root: string
let t: TestApp
let alice: TestClient
let panelId: number

const HEADER = ['id', 'name', 'age', 'active', 'born', 'seen', 'note']
const ROWS = [
  ['p1', 'Ada', '34', 'yes', '1990-02-01', '2026-01-01T10:00:00Z', 'hi'],
  ['p2', 'Grace', '', '', '', '', ''],
]
const table = (sep: string) => `${[HEADER, ...ROWS].map((r) => r.join(sep)).join('\n')}\n`

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'typed-blanks-'))
  await writeFile(join(root, 'patients.csv'), table(','))
  await writeFile(join(root, 'patients.tsv'), table('\t'))
  await writeFile(
    join(root, 'patients.json'),
    JSON.stringify(ROWS.map((r) => Object.fromEntries(HEADER.map((h, i) => [h, r[i]])))),
  )
})
afterAll(() => rm(root, { recursive: true, force: true }))

/** A fresh app (with the files folder for file sources) and a panel with a column of each kind. */
async function setUp(files: boolean) {
  t = await makeTestApp(files ? { filesDir: root } : {})
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await createPanel(alice)
  for (const [name, sourceField, type] of [
    ['Name', 'name', 'text'],
    ['Age', 'age', 'number'],
    ['Active', 'active', 'boolean'],
    ['Born', 'born', 'date'],
    ['Seen', 'seen', 'datetime'],
    ['Note', 'note', 'text'],
  ]) {
    await baseColumn(alice, panelId, { name, sourceField, type })
  }
}

const CELLS = ['Name', 'Age', 'Active', 'Born', 'Seen', 'Note']

/** The panel's rows (sorted by name), each with the cells of CELLS. */
async function cells() {
  const res = await alice.get(`/api/panels/${panelId}/rows${query({ sort: 'Name', limit: 100 })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body.data.map((r: Record<string, unknown>) => CELLS.map((c) => r[c]))
}

/** The names of the rows whose `column` matches `operator`. */
async function namesWhere(column: string, operator: string) {
  const res = await alice.get(`/api/panels/${panelId}/rows${query({ filters: [{ columnTitle: column, operator }] })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body.data.map((r: { Name: string }) => r.Name).sort()
}

const FILLED = ['Ada', 34, true, '1990-02-01', '2026-01-01T10:00:00.000Z', 'hi']
const BLANK = ['Grace', null, null, null, null, '']

/** The blank patient is null in every typed column, "" in the text one, and isNull finds her. */
async function expectTypedBlanksNull() {
  expect(await cells()).toEqual([FILLED, BLANK])
  for (const column of ['Age', 'Active', 'Born', 'Seen']) expect(await namesWhere(column, 'isNull'), column).toEqual(['Grace'])
  expect(await namesWhere('Note', 'isNull')).toEqual([])
  expect(await namesWhere('Note', 'isEmpty')).toEqual(['Grace'])
}

describe('file sources', () => {
  beforeEach(() => setUp(true))

  it.each([
    ['a csv source', 'csv', { filePath: 'patients.csv' }],
    ['a tsv file source', 'file', { filePath: 'patients.tsv', format: 'tsv' }],
  ])('%s: a blank age is null, a blank note ""', async (_name, type, config) => {
    const source = await createSource(alice, panelId, { ...config, keyField: 'id' }, type)
    expect(source.body.syncStatus, JSON.stringify(source.body)).toBe('success')
    await expectTypedBlanksNull()
    // The record keeps the file's field as it was.
    expect((await currentRecords(t, source.body.id))[1].data.age).toBe('')
  })

  it('a json source: a "" in a text column stays "", and a typed column reads it as no value too', async () => {
    const source = await createSource(alice, panelId, { filePath: 'patients.json', keyField: 'id' }, 'json')
    expect(source.body.syncStatus, JSON.stringify(source.body)).toBe('success')
    await expectTypedBlanksNull()
    expect((await currentRecords(t, source.body.id))[1].data).toMatchObject({ age: '', note: '' })
  })
})

describe('imports', () => {
  beforeEach(() => setUp(false))

  const mapping = HEADER.slice(1).map((h) => ({ sourceField: h, targetColumn: h[0].toUpperCase() + h.slice(1) }))

  it('a csv import: a blank age is null and isNull finds it; a blank note stays ""', async () => {
    const res = await importFile(t, panelId, { content: table(','), name: 'patients.csv' }, { format: 'csv', mapping })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body).toMatchObject({ rowsImported: 2, rowsRejected: 0 })
    await expectTypedBlanksNull()
  })

  it.skipIf(onTarget('workers', SKIP.workersXlsx))(
    'an xlsx import: an empty cell is no value (a workbook drops empty text cells)',
    async () => {
      const workbook = new ExcelJS.Workbook()
      const sheet = workbook.addWorksheet('Patients')
      sheet.addRow(HEADER)
      for (const r of ROWS) sheet.addRow(r)
      const content = new Uint8Array(await workbook.xlsx.writeBuffer())
      const res = await importFile(t, panelId, { content, name: 'patients.xlsx' }, { format: 'excel', mapping })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toMatchObject({ rowsImported: 2, rowsRejected: 0 })
      const [filled, blank] = await cells()
      expect(filled).toEqual(FILLED)
      // An empty cell is no cell in a workbook: null in every column, text included.
      expect(blank.slice(0, 5)).toEqual(BLANK.slice(0, 5))
      expect(await namesWhere('Age', 'isNull')).toEqual(['Grace'])
    },
  )
})
