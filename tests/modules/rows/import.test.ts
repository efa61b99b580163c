import ExcelJS from 'exceljs'
import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { tokenFor } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { baseColumn, calculatedColumn, createPanel, footprint, importFile, importRows, storedRows } from './import.fixtures.ts'

let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await createPanel(alice)
})

const CSV = 'MRN,Name,Age\n1001,  ada lovelace ,36\n1002,grace hopper,45\n1003,alan turing,41\n'

describe('POST /api/panels/{panelId}/import (csv)', () => {
  it('maps, transforms and creates columns, storing rows with their cells in an import source', async () => {
    const config = {
      format: 'csv',
      mapping: [
        { sourceField: 'MRN', targetColumn: 'MRN' },
        { sourceField: 'Name', targetColumn: 'Patient', transformation: 'UPPER(TRIM({value}))' },
        { sourceField: 'Age', targetColumn: 'Age' },
      ],
      options: { hasHeaders: true, createColumns: true },
    }
    await baseColumn(alice, panelId, { name: 'Age', sourceField: 'age', type: 'number' })
    await calculatedColumn(alice, panelId, { name: 'Age in months', formula: '{Age} * 12', type: 'number' })
    const res = await importFile(t, panelId, { content: CSV, name: 'patients.csv' }, config)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ rowsRead: 3, rowsImported: 3, rowsUpdated: 0, rowsRejected: 0, errors: [] })
    expect(res.body.columnsCreated).toEqual(['MRN', 'Patient'])

    const rows = await storedRows(t, panelId)
    expect(rows.map((r) => r.type)).toEqual(['import', 'import', 'import'])
    expect(rows.map((r) => r.data)).toEqual([
      { MRN: '1001', Patient: 'ADA LOVELACE', Age: '36' },
      { MRN: '1002', Patient: 'GRACE HOPPER', Age: '45' },
      { MRN: '1003', Patient: 'ALAN TURING', Age: '41' },
    ])
    // The existing number column reads the import by its name and types it; the formula runs on it.
    expect(rows[0].cells).toEqual({ Age: 36, 'Age in months': 432, MRN: '1001', Patient: 'ADA LOVELACE' })

    const columns = (await alice.get(`/api/panels/${panelId}/columns`)).body.baseColumns
    const created = columns.filter((c: { name: string }) => c.name === 'MRN' || c.name === 'Patient')
    expect(created.map((c: { type: string; dataSourceId: number }) => [c.type, c.dataSourceId])).toEqual([
      ['text', res.body.dataSourceId],
      ['text', res.body.dataSourceId],
    ])
    const sources = (await alice.get(`/api/panels/${panelId}/datasources`)).body
    expect(sources).toEqual([expect.objectContaining({ id: res.body.dataSourceId, type: 'import', syncStatus: 'success' })])
    const changes = (await alice.get(`/api/changes/panels?panelId=${panelId}&entityType=DataSource`)).body.changes
    expect(changes.map((c: { action: string }) => c.action)).toEqual(['UPDATE', 'CREATE'])
    expect(changes[0].changes.import.newValue).toMatchObject({ rowsImported: 3, rowsRejected: 0 })
  })

  it('keeps imported values when the panel is recomputed after a column change', async () => {
    await baseColumn(alice, panelId, { name: 'Age', fhirPath: 'Patient.extension.age', type: 'number' })
    const config = {
      format: 'csv',
      mapping: [
        { sourceField: 'MRN', targetColumn: 'MRN' },
        { sourceField: 'Age', targetColumn: 'Age' },
      ],
      options: { createColumns: true },
    }
    expect((await importFile(t, panelId, { content: CSV, name: 'p.csv' }, config)).body.rowsImported).toBe(3)
    await calculatedColumn(alice, panelId, { name: 'Older', formula: '{Age} + 1', type: 'number' })
    const rows = await storedRows(t, panelId)
    expect(rows.map((r) => [r.cells.MRN, r.cells.Age, r.cells.Older])).toEqual([
      ['1001', 36, 37],
      ['1002', 45, 46],
      ['1003', 41, 42],
    ])
  })

  it('appends rows without uniqueFields, identical rows included, into the same import source', async () => {
    const config = { format: 'csv', mapping: [{ sourceField: 'MRN', targetColumn: 'MRN' }], options: { createColumns: true } }
    const first = await importFile(t, panelId, { content: 'MRN\n1\n1\n', name: 'a.csv' }, config)
    const second = await importFile(t, panelId, { content: 'MRN\n1\n', name: 'a.csv' }, config)
    expect([first.body.rowsImported, second.body.rowsImported]).toEqual([2, 1])
    expect(second.body.dataSourceId).toBe(first.body.dataSourceId)
    expect(second.body.columnsCreated).toEqual([])
    const keys = (await storedRows(t, panelId)).map((r) => r.key)
    expect(new Set(keys).size).toBe(3)
    expect(keys[1]).toBe(`${keys[0]}#2`)
  })

  it('reads files without headers by column1..N and skips preamble lines', async () => {
    const config = {
      format: 'csv',
      mapping: [{ sourceField: 'column2', targetColumn: 'Name' }],
      options: { hasHeaders: false, skipRows: 2, createColumns: true },
    }
    const res = await importFile(t, panelId, { content: 'Export of 2026\n(c) clinic\n1,Ada\n2,Grace\n', name: 'x.csv' }, config)
    expect(res.body).toMatchObject({ rowsRead: 2, rowsImported: 2 })
    expect((await storedRows(t, panelId)).map((r) => r.cells.Name)).toEqual(['Ada', 'Grace'])
  })
})

describe('POST /api/panels/{panelId}/import (rejections)', () => {
  it('rejects rows failing required, unique, type or validation rules, with their 1-based row numbers', async () => {
    await baseColumn(alice, panelId, {
      name: 'Score',
      sourceField: 'score',
      type: 'number',
      properties: { validation: { max: 10 } },
    })
    const config = {
      format: 'csv',
      mapping: [
        { sourceField: 'MRN', targetColumn: 'MRN' },
        { sourceField: 'Score', targetColumn: 'Score' },
        { sourceField: 'Score', targetColumn: 'Ratio', transformation: '100 / {value}' },
      ],
      options: { createColumns: true },
      validation: { requiredFields: ['MRN'], uniqueFields: ['MRN'] },
    }
    const csv = 'MRN,Score\n1,5\n,6\n3,abc\n1,7\n5,11\n6,0\n7,8\n'
    const res = await importFile(t, panelId, { content: csv, name: 'scores.csv' }, config)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ rowsRead: 7, rowsImported: 2, rowsUpdated: 0, rowsRejected: 5 })
    const byRow = res.body.errors.map((e: { row: number; field: string; message: string }) => [e.row, e.field, e.message])
    expect(byRow).toEqual([
      [2, 'MRN', 'MRN is required'],
      [3, 'Ratio', expect.stringMatching(/^transformation failed \(VALUE\): /)],
      [4, 'MRN', 'duplicate of row 1 (MRN = "1")'],
      [5, 'Score', expect.stringMatching(/^Score .*10/)],
      [6, 'Ratio', 'transformation failed (DIV_ZERO): division by zero'],
    ])
    expect((await storedRows(t, panelId)).map((r) => r.data.MRN)).toEqual(['1', '7'])
  })

  it('rejects a value that is not of the column type', async () => {
    await baseColumn(alice, panelId, { name: 'Born', sourceField: 'born', type: 'date' })
    const config = { format: 'json', mapping: [{ sourceField: 'born', targetColumn: 'Born' }] }
    const res = await importRows(t, panelId, config, [{ born: '1990-02-03' }, { born: 'yesterday-ish' }])
    expect(res.body).toMatchObject({ rowsImported: 1, rowsRejected: 1 })
    expect(res.body.errors).toEqual([{ row: 2, field: 'Born', message: expect.any(String) }])
    expect((await storedRows(t, panelId))[0].cells.Born).toBe('1990-02-03')
  })
})

describe('POST /api/panels/{panelId}/import (updateExisting)', () => {
  const config = (updateExisting: boolean) => ({
    format: 'json',
    mapping: [
      { sourceField: 'mrn', targetColumn: 'MRN' },
      { sourceField: 'status', targetColumn: 'Status' },
    ],
    options: { createColumns: true, updateExisting },
    validation: { uniqueFields: ['mrn'] },
  })

  it('updates rows by their unique fields and inserts the others', async () => {
    await importRows(t, panelId, config(true), [
      { mrn: 'A', status: 'new' },
      { mrn: 'B', status: 'new' },
    ])
    const before = await storedRows(t, panelId)
    const res = await importRows(t, panelId, config(true), [
      { mrn: 'B', status: 'seen' },
      { mrn: 'C', status: 'new' },
    ])
    expect(res.body).toMatchObject({ rowsRead: 2, rowsImported: 1, rowsUpdated: 1, rowsRejected: 0 })
    const after = await storedRows(t, panelId)
    expect(after.map((r) => [r.data.MRN, r.cells.Status])).toEqual([
      ['A', 'new'],
      ['B', 'seen'],
      ['C', 'new'],
    ])
    expect(after[1].id).toBe(before[1].id)
  })

  it('rejects rows whose key exists when updateExisting is off', async () => {
    await importRows(t, panelId, config(false), [{ mrn: 'A', status: 'new' }])
    const res = await importRows(t, panelId, config(false), [{ mrn: 'A', status: 'changed' }])
    expect(res.body).toMatchObject({ rowsImported: 0, rowsRejected: 1 })
    expect(res.body.errors[0]).toEqual({ row: 1, field: 'MRN', message: expect.stringContaining('already exists') })
    expect((await storedRows(t, panelId))[0].cells.Status).toBe('new')
  })
})

describe('POST /api/panels/{panelId}/import (excel and json files)', () => {
  it.skipIf(onTarget(['workers'], SKIP.workersXlsx))('imports the first sheet of an xlsx workbook', async () => {
    const workbook = new ExcelJS.Workbook()
    const sheet = workbook.addWorksheet('Patients')
    sheet.addRow(['MRN', 'Weight'])
    sheet.addRow(['X1', 71.5])
    sheet.addRow(['X2', 80])
    const content = new Uint8Array(await workbook.xlsx.writeBuffer())
    await baseColumn(alice, panelId, { name: 'Weight', sourceField: 'weight', type: 'number' })
    const config = {
      format: 'excel',
      mapping: [
        { sourceField: 'MRN', targetColumn: 'MRN' },
        { sourceField: 'Weight', targetColumn: 'Weight' },
      ],
      options: { createColumns: true },
    }
    const res = await importFile(t, panelId, { content, name: 'patients.xlsx' }, config)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ rowsRead: 2, rowsImported: 2 })
    expect((await storedRows(t, panelId)).map((r) => [r.cells.MRN, r.cells.Weight])).toEqual([
      ['X1', 71.5],
      ['X2', 80],
    ])
  })

  it('imports a json file of objects, reading nested fields by dotted path', async () => {
    const content = JSON.stringify([
      { id: 'p1', name: { family: 'Lovelace' } },
      { id: 'p2', name: { family: 'Hopper' } },
    ])
    const config = {
      format: 'json',
      mapping: [{ sourceField: 'name.family', targetColumn: 'Family' }],
      options: { createColumns: true, skipRows: 1 },
    }
    const res = await importFile(t, panelId, { content, name: 'patients.json' }, config)
    expect(res.body).toMatchObject({ rowsRead: 1, rowsImported: 1 })
    expect((await storedRows(t, panelId)).map((r) => r.cells.Family)).toEqual(['Hopper'])
  })
})

describe('POST /api/panels/{panelId}/import (tenancy)', () => {
  it("answers 404 for another tenant's or another user's panel and writes nothing", async () => {
    const before = await footprint(t, panelId)
    const config = { format: 'json', mapping: [{ sourceField: 'a', targetColumn: 'A' }], options: { createColumns: true } }
    const eve = await importRows(t, panelId, config, [{ a: 1 }], { tenant: 'tenant-b', user: 'eve' })
    const bob = await importRows(t, panelId, config, [{ a: 1 }], { user: 'bob' })
    expect([eve.status, bob.status]).toEqual([404, 404])
    expect(eve.body.message).toBe(`Panel ${panelId} not found for tenant tenant-b`)
    expect(await footprint(t, panelId)).toEqual(before)
  })

  it('answers 401 without a token, before reading the body', async () => {
    const res = await t.app.request(`/api/panels/${panelId}/import`, { method: 'POST', body: '{}' })
    expect(res.status).toBe(401)
  })

  it('answers 403 when the body names another tenant', async () => {
    const res = await t.app.request(`/api/panels/${panelId}/import`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${await tokenFor('tenant-a', 'alice')}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        config: { format: 'json', mapping: [{ sourceField: 'a', targetColumn: 'A' }] },
        rows: [],
        tenantId: 'tenant-b',
      }),
    })
    expect(res.status).toBe(403)
    expect((await res.json()).error).toBe('Access denied to tenant')
  })
})
