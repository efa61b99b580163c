import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { baseColumn, createPanel, importFile, importRows, storedRows } from './import.fixtures.ts'

/** Matching by uniqueFields (docs/import-export.md "Matching"): the panel's rows, by their cells as materialised. */

let root: string
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'import-unique-'))
  await writeFile(join(root, 'synced.csv'), 'mrn,status\nS1,synced\n')
})
afterAll(() => rm(root, { recursive: true, force: true }))

beforeEach(async () => {
  t = await makeTestApp({ filesDir: root })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await createPanel(alice)
})

const json = (options: Record<string, unknown>, uniqueFields?: string[]) => ({
  format: 'json',
  mapping: [
    { sourceField: 'mrn', targetColumn: 'MRN' },
    { sourceField: 'status', targetColumn: 'Status' },
  ],
  options: { createColumns: true, ...options },
  ...(uniqueFields ? { validation: { uniqueFields } } : {}),
})
const UPDATE = json({ updateExisting: true }, ['mrn'])
const INSERT = json({}, ['mrn'])

const rowsOf = async () => (await storedRows(t, panelId)).map((r) => [r.cells.MRN, r.cells.Status])
const errorsOf = (body: { errors: { row: number; field: string; message: string }[] }) =>
  body.errors.map((e) => [e.row, e.field, e.message])

describe('POST /api/panels/{panelId}/import (updateExisting)', () => {
  it('updates the imported row whose unique value matches, also one imported before without uniqueFields', async () => {
    await importRows(t, panelId, json({}), [
      { mrn: 'A', status: 'new' },
      { mrn: 'B', status: 'new' },
    ])
    const before = await storedRows(t, panelId)
    const res = await importRows(t, panelId, UPDATE, [{ mrn: 'B', status: 'seen' }])
    expect(res.body).toMatchObject({ rowsRead: 1, rowsImported: 0, rowsUpdated: 1, rowsRejected: 0, errors: [] })
    const after = await storedRows(t, panelId)
    expect(after.map((r) => [r.id, r.cells.MRN, r.cells.Status])).toEqual([
      [before[0].id, 'A', 'new'],
      [before[1].id, 'B', 'seen'],
    ])
  })

  it('matches a csv value by the value its column holds, keeping the columns the update does not map', async () => {
    await baseColumn(alice, panelId, { name: 'MRN', sourceField: 'MRN', type: 'number' })
    const first = {
      format: 'csv',
      mapping: ['MRN', 'Name', 'Age'].map((f) => ({ sourceField: f, targetColumn: f })),
      options: { createColumns: true },
      validation: { uniqueFields: ['MRN'] },
    }
    const csv = 'MRN,Name,Age\n1001,Ada,36\n1002,Grace,45\n'
    expect((await importFile(t, panelId, { content: csv, name: 'people.csv' }, first)).body).toMatchObject({ rowsImported: 2 })
    const update = {
      format: 'csv',
      mapping: ['MRN', 'Age'].map((f) => ({ sourceField: f, targetColumn: f })),
      options: { updateExisting: true },
      validation: { uniqueFields: ['MRN'] },
    }
    // 1002.0 and 1,001 are the numbers 1002 and 1001 in the number column MRN.
    const res = await importFile(t, panelId, { content: 'MRN,Age\n1002.0,46\n"1,001",37\n', name: 'ages.csv' }, update)
    expect(res.body).toMatchObject({ rowsRead: 2, rowsImported: 0, rowsUpdated: 2, rowsRejected: 0 })
    expect((await storedRows(t, panelId)).map((r) => [r.cells.MRN, r.cells.Name, r.cells.Age])).toEqual([
      [1001, 'Ada', '37'],
      [1002, 'Grace', '46'],
    ])
  })

  it('compares exact values: " 1" is not "1", and 0, false and "0" are three keys in a json column', async () => {
    await importRows(t, panelId, UPDATE, [{ mrn: '1', status: 'a' }])
    const res = await importRows(t, panelId, UPDATE, [
      { mrn: ' 1', status: 'b' },
      { mrn: 1, status: 'c' },
    ])
    // The number 1 reads as the text "1" in the text column MRN: it updates that row.
    expect(res.body).toMatchObject({ rowsImported: 1, rowsUpdated: 1, rowsRejected: 0 })
    expect(await rowsOf()).toEqual([
      ['1', 'c'],
      [' 1', 'b'],
    ])

    const other = await createPanel(alice, 'Codes')
    await baseColumn(alice, other, { name: 'Code', sourceField: 'code', type: 'json' })
    const codes = {
      format: 'json',
      mapping: [{ sourceField: 'code', targetColumn: 'Code' }],
      validation: { uniqueFields: ['Code'] },
    }
    const res2 = await importRows(t, other, codes, [{ code: 0 }, { code: false }, { code: '0' }, { code: false }])
    expect(res2.body).toMatchObject({ rowsImported: 3, rowsRejected: 1 })
    expect(errorsOf(res2.body)).toEqual([[4, 'Code', 'duplicate of row 2 (Code = false)']])
  })

  it('matches composite keys on every unique field, whatever their order in the config', async () => {
    const config = (uniqueFields: string[], updateExisting: boolean) => ({
      format: 'json',
      mapping: ['mrn', 'site', 'status'].map((f) => ({ sourceField: f, targetColumn: f.toUpperCase() })),
      options: { createColumns: true, updateExisting },
      validation: { uniqueFields },
    })
    await importRows(t, panelId, config(['MRN', 'SITE'], false), [
      { mrn: '1', site: 'A', status: 'new' },
      { mrn: '1', site: 'B', status: 'new' },
      { mrn: '2', site: 'A', status: 'new' },
    ])
    const res = await importRows(t, panelId, config(['SITE', 'MRN'], true), [
      { mrn: '1', site: 'B', status: 'seen' },
      { mrn: '2', site: 'B', status: 'new' },
    ])
    expect(res.body).toMatchObject({ rowsImported: 1, rowsUpdated: 1, rowsRejected: 0 })
    const rows = (await storedRows(t, panelId)).map((r) => [r.cells.MRN, r.cells.SITE, r.cells.STATUS])
    expect(rows).toEqual([
      ['1', 'A', 'new'],
      ['1', 'B', 'seen'],
      ['2', 'A', 'new'],
      ['2', 'B', 'new'],
    ])
    const again = await importRows(t, panelId, config(['MRN', 'SITE'], false), [{ mrn: '2', site: 'A', status: 'x' }])
    expect(errorsOf(again.body)).toEqual([
      [1, 'MRN, SITE', 'a row with MRN = "2", SITE = "A" already exists (set options.updateExisting to update it)'],
    ])
  })

  it('merges repeats of a key inside one file into one row, the later row winning', async () => {
    await importRows(t, panelId, UPDATE, [{ mrn: 'A', status: 'stored' }])
    const res = await importRows(t, panelId, UPDATE, [
      { mrn: 'B', status: 'first' },
      { mrn: 'A', status: 'second' },
      { mrn: 'B', status: 'third' },
      { mrn: 'A', status: 'fourth' },
    ])
    expect(res.body).toMatchObject({ rowsRead: 4, rowsImported: 1, rowsUpdated: 3, rowsRejected: 0, errors: [] })
    expect(await rowsOf()).toEqual([
      ['A', 'fourth'],
      ['B', 'third'],
    ])
  })

  it('rejects an update of a row another data source synced, naming the source', async () => {
    await baseColumn(alice, panelId, { name: 'MRN', fhirPath: 'mrn', type: 'text' })
    await baseColumn(alice, panelId, { name: 'Status', fhirPath: 'status', type: 'text' })
    const source = await alice.post(`/api/panels/${panelId}/datasources`, { type: 'csv', config: { filePath: 'synced.csv' } })
    expect(source.body.syncStatus).toBe('success')
    const reason = `MRN = "S1" matches a row of the panel's csv data source ${source.body.id}; an import cannot change a synced row (its next sync would overwrite it)`
    for (const [config, fresh] of [
      [UPDATE, 'N1'],
      [INSERT, 'N2'],
    ] as const) {
      const res = await importRows(t, panelId, config, [
        { mrn: 'S1', status: 'imported' },
        { mrn: fresh, status: 'new' },
      ])
      expect(res.body).toMatchObject({ rowsImported: 1, rowsUpdated: 0, rowsRejected: 1 })
      expect(errorsOf(res.body)).toEqual([[1, 'MRN', reason]])
    }
    const rows = await storedRows(t, panelId)
    expect(rows.map((r) => [r.type, r.cells.MRN, r.cells.Status])).toEqual([
      ['csv', 'S1', 'synced'],
      ['import', 'N1', 'new'],
      ['import', 'N2', 'new'],
    ])
  })

  it('matches cells of the current columns, recomputing a panel a column change left stale', async () => {
    const mrn = await baseColumn(alice, panelId, { name: 'MRN', fhirPath: 'mrn', type: 'text' })
    await baseColumn(alice, panelId, { name: 'Status', fhirPath: 'status', type: 'text' })
    await alice.post(`/api/panels/${panelId}/datasources`, { type: 'csv', config: { filePath: 'synced.csv' } })
    // The state a column change leaves when its background recompute is lost (a Workers isolate
    // ended): the panel is stale and the rows lack the column's cells. No service call leaves it
    // deterministically, so it is written here.
    await t.client.execute({
      sql: `UPDATE records SET cells = json_remove(cells, '$."${mrn.id}"') WHERE panel_id = ?`,
      args: [panelId],
    })
    await t.client.execute({ sql: 'UPDATE panels SET columns_version = columns_version + 1 WHERE id = ?', args: [panelId] })
    const res = await importRows(t, panelId, UPDATE, [{ mrn: 'S1', status: 'imported' }])
    expect(res.body).toMatchObject({ rowsImported: 0, rowsUpdated: 0, rowsRejected: 1 })
    expect(res.body.errors[0].message).toMatch(/^MRN = "S1" matches a row of the panel's csv data source/)
    expect((await storedRows(t, panelId)).map((r) => [r.type, r.cells.MRN])).toEqual([['csv', 'S1']])
  })

  it('rejects a key that matches several imported rows: there is no telling which to update', async () => {
    await importRows(t, panelId, json({}), [
      { mrn: 'A', status: 'one' },
      { mrn: 'A', status: 'two' },
    ])
    const res = await importRows(t, panelId, UPDATE, [{ mrn: 'A', status: 'three' }])
    expect(errorsOf(res.body)).toEqual([[1, 'MRN', 'MRN = "A" matches 2 imported rows; there is no telling which one to update']])
    expect(await rowsOf()).toEqual([
      ['A', 'one'],
      ['A', 'two'],
    ])
  })
})

describe('POST /api/panels/{panelId}/import (uniqueFields without updateExisting)', () => {
  it('rejects a row matching a stored one, naming the values', async () => {
    await importRows(t, panelId, INSERT, [{ mrn: 'A', status: 'new' }])
    const res = await importRows(t, panelId, INSERT, [
      { mrn: 'A', status: 'changed' },
      { mrn: 'B', status: 'new' },
    ])
    expect(res.body).toMatchObject({ rowsRead: 2, rowsImported: 1, rowsUpdated: 0, rowsRejected: 1 })
    expect(errorsOf(res.body)).toEqual([
      [1, 'MRN', 'a row with MRN = "A" already exists (set options.updateExisting to update it)'],
    ])
    expect(await rowsOf()).toEqual([
      ['A', 'new'],
      ['B', 'new'],
    ])
  })

  it('rejects the repeats of a key inside one csv file, keeping the first', async () => {
    const config = {
      format: 'csv',
      mapping: [
        { sourceField: 'MRN', targetColumn: 'MRN' },
        { sourceField: 'Status', targetColumn: 'Status' },
      ],
      options: { createColumns: true },
      validation: { uniqueFields: ['MRN'] },
    }
    const res = await importFile(t, panelId, { content: 'MRN,Status\n7,a\n8,b\n7,c\n7,d\n', name: 'dups.csv' }, config)
    expect(res.body).toMatchObject({ rowsRead: 4, rowsImported: 2, rowsRejected: 2 })
    expect(errorsOf(res.body)).toEqual([
      [3, 'MRN', 'duplicate of row 1 (MRN = "7")'],
      [4, 'MRN', 'duplicate of row 1 (MRN = "7")'],
    ])
    expect(await rowsOf()).toEqual([
      ['7', 'a'],
      ['8', 'b'],
    ])
  })

  it('rejects rows whose unique value is missing or blank, telling "" from missing, and matches none of them', async () => {
    await importRows(t, panelId, UPDATE, [{ mrn: 'A', status: 'stored' }])
    const res = await importRows(t, panelId, UPDATE, [
      { mrn: '', status: 'a' },
      { status: 'b' },
      { mrn: null, status: 'c' },
      { mrn: '  ', status: 'd' },
    ])
    expect(res.body).toMatchObject({ rowsRead: 4, rowsImported: 0, rowsUpdated: 0, rowsRejected: 4 })
    expect(errorsOf(res.body)).toEqual([
      [1, 'MRN', 'MRN is blank (""); a blank value cannot identify the row (uniqueFields)'],
      [2, 'MRN', 'MRN is missing; it identifies the row (uniqueFields)'],
      [3, 'MRN', 'MRN is missing; it identifies the row (uniqueFields)'],
      [4, 'MRN', 'MRN is blank ("  "); a blank value cannot identify the row (uniqueFields)'],
    ])
    const csv = await importFile(t, panelId, { content: 'mrn,status\n,e\n', name: 'blank.csv' }, { ...UPDATE, format: 'csv' })
    expect(errorsOf(csv.body)).toEqual([[1, 'MRN', 'MRN is blank (""); a blank value cannot identify the row (uniqueFields)']])
    expect(await rowsOf()).toEqual([['A', 'stored']])
  })
})
