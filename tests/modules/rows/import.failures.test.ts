import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { tokenFor } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { createPanel, footprint, importFile, importRows, storedRows } from './import.fixtures.ts'

let t: TestApp
let alice: TestClient
let panelId: number

const CONFIG = {
  format: 'csv',
  mapping: [
    { sourceField: 'MRN', targetColumn: 'MRN' },
    { sourceField: 'Name', targetColumn: 'Name' },
  ],
  options: { createColumns: true },
}

/** A panel that already holds one import, so "changes nothing" covers records, columns and sources. */
beforeEach(async () => {
  t = await makeTestApp({ env: { IMPORT_MAX_BYTES: '4096', IMPORT_MAX_ROWS: '50' } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await createPanel(alice)
  const first = await importFile(t, panelId, { content: 'MRN,Name\n1,Ada\n', name: 'first.csv' }, CONFIG)
  expect(first.status).toBe(200)
})

async function expectNothingChanged(res: { status: number; body: any }, status: number, path?: string) {
  expect(res.status).toBe(status)
  if (path) expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path)
  expect(await storedRows(t, panelId)).toHaveLength(1)
}

describe('POST /api/panels/{panelId}/import (a file failing as a whole changes nothing)', () => {
  it('refuses malformed csv, even when the fault is after good rows', async () => {
    const before = await footprint(t, panelId)
    const wide = await importFile(t, panelId, { content: 'MRN,Name,New\n2,Grace,x\n3,Alan,y,z\n', name: 'p.csv' }, CONFIG)
    await expectNothingChanged(wide, 400, 'file')
    expect(wide.body.message).toMatch(/line 3/)
    const quote = await importFile(t, panelId, { content: 'MRN,Name\n2,"Grace\n', name: 'p.csv' }, CONFIG)
    await expectNothingChanged(quote, 400, 'file')
    expect(await footprint(t, panelId)).toEqual(before)
  })

  it('refuses a file missing a mapped header, naming the mapping', async () => {
    const before = await footprint(t, panelId)
    const res = await importFile(t, panelId, { content: 'MRN,Nom\n2,Grace\n', name: 'p.csv' }, CONFIG)
    await expectNothingChanged(res, 400, 'config.mapping.1.sourceField')
    expect(res.body.details[0].message).toContain('MRN, Nom')
    expect(await footprint(t, panelId)).toEqual(before)
  })

  it('refuses bad configs: unknown targets, bad transformations, updateExisting without keys, unknown fields', async () => {
    const before = await footprint(t, panelId)
    const file = { content: 'MRN,Name\n2,Grace\n', name: 'p.csv' }
    const unknownTarget = await importFile(t, panelId, file, {
      ...CONFIG,
      options: {},
      mapping: [{ sourceField: 'MRN', targetColumn: 'Nope' }],
    })
    await expectNothingChanged(unknownTarget, 400, 'config.mapping.0.targetColumn')
    const transformation = await importFile(t, panelId, file, {
      ...CONFIG,
      mapping: [{ sourceField: 'MRN', targetColumn: 'X', transformation: 'UPPER({valeu})' }],
    })
    await expectNothingChanged(transformation, 400, 'config.mapping.0.transformation')
    expect(transformation.body.details[0].message).toMatch(/reference error at position 6: .*did you mean \{value\}/)
    const noKeys = await importFile(t, panelId, file, { ...CONFIG, options: { updateExisting: true } })
    await expectNothingChanged(noKeys, 400, 'config.options.updateExisting')
    const unknownField = await importFile(t, panelId, file, { ...CONFIG, validation: { requiredFields: ['Age'] } })
    await expectNothingChanged(unknownField, 400, 'config.validation.requiredFields.0')
    const twice = await importFile(t, panelId, file, {
      ...CONFIG,
      mapping: [
        { sourceField: 'MRN', targetColumn: 'X' },
        { sourceField: 'Name', targetColumn: 'X' },
      ],
    })
    await expectNothingChanged(twice, 400, 'config.mapping.1.targetColumn')
    const shape = await importFile(t, panelId, file, { format: 'pdf', mapping: [] })
    await expectNothingChanged(shape, 400, 'config.format')
    expect(shape.body.details.map((d: { path: string }) => d.path)).toContain('config.mapping')
    const notJson = await importFile(t, panelId, file, '{not json')
    await expectNothingChanged(notJson, 400, 'config')
    expect(await footprint(t, panelId)).toEqual(before)
  })

  it('refuses formats the config does not allow or a file named for another format', async () => {
    const before = await footprint(t, panelId)
    const file = { content: 'MRN,Name\n2,Grace\n', name: 'p.csv' }
    const allowed = await importFile(t, panelId, file, { ...CONFIG, validation: { allowedFormats: ['json'] } })
    await expectNothingChanged(allowed, 400, 'config.format')
    const named = await importFile(t, panelId, { ...file, name: 'p.xlsx' }, CONFIG)
    await expectNothingChanged(named, 400, 'file')
    if (!onTarget('workers', SKIP.workersXlsx)) {
      const garbage = await importFile(t, panelId, { content: 'not a zip', name: 'p.xlsx' }, { ...CONFIG, format: 'excel' })
      await expectNothingChanged(garbage, 400, 'file')
      expect(garbage.body.message).toMatch(/not a readable xlsx workbook/)
    }
    const badJson = await importFile(t, panelId, { content: '[{"MRN": 1', name: 'p.json' }, { ...CONFIG, format: 'json' })
    await expectNothingChanged(badJson, 400, 'file')
    expect(await footprint(t, panelId)).toEqual(before)
  })

  it('answers 413 over validation.maxFileSize, IMPORT_MAX_BYTES or IMPORT_MAX_ROWS', async () => {
    const before = await footprint(t, panelId)
    const small = 'MRN,Name\n2,Grace\n3,Alan\n'
    const own = await importFile(t, panelId, { content: small, name: 'p.csv' }, { ...CONFIG, validation: { maxFileSize: 10 } })
    await expectNothingChanged(own, 413)
    expect(own.body.message).toMatch(/validation.maxFileSize \(10 bytes\)/)
    const big = `MRN,Name\n${'9,Somebody with a long name\n'.repeat(200)}`
    const service = await importFile(t, panelId, { content: big, name: 'p.csv' }, CONFIG)
    await expectNothingChanged(service, 413)
    expect(service.body.message).toMatch(/IMPORT_MAX_BYTES/)
    const rows = Array.from({ length: 51 }, (_, i) => ({ MRN: String(i) }))
    const many = await importRows(t, panelId, { ...CONFIG, format: 'json', mapping: [CONFIG.mapping[0]] }, rows)
    await expectNothingChanged(many, 413)
    expect(many.body.message).toMatch(/IMPORT_MAX_ROWS/)
    expect(await footprint(t, panelId)).toEqual(before)
  })

  it('answers 415 for a body that is neither multipart nor JSON, and 400 without a file', async () => {
    const token = await tokenFor('tenant-a', 'alice')
    const raw = await t.app.request(`/api/panels/${panelId}/import`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'text/csv' },
      body: 'MRN\n1\n',
    })
    expect(raw.status).toBe(415)
    const form = new FormData()
    form.set('config', JSON.stringify(CONFIG))
    const noFile = await t.app.request(`/api/panels/${panelId}/import`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}` },
      body: form,
    })
    expect(noFile.status).toBe(400)
    expect((await noFile.json()).details[0].path).toBe('file')
  })
})

describe('the import data source', () => {
  it('cannot be created, configured or synchronised by hand, and a sync keeps its rows', async () => {
    const create = await alice.post(`/api/panels/${panelId}/datasources`, { type: 'import', config: {} })
    expect(create.status).toBe(400)
    expect(create.body.details[0]).toEqual({
      path: 'config',
      message: expect.stringContaining('POST /api/panels/{panelId}/import'),
    })
    const [source] = (await alice.get(`/api/panels/${panelId}/datasources`)).body
    expect(source.type).toBe('import')
    const update = await alice.put(`/api/datasources/${source.id}`, { config: { filePath: 'x.csv' } })
    expect(update.status).toBe(400)
    const sync = await alice.post(`/api/datasources/${source.id}/sync`, {})
    expect(sync.status).toBe(400)
    expect(sync.body.message).toContain('POST /api/panels/{panelId}/import')
    expect((await alice.get(`/api/datasources/${source.id}/sync-runs`)).body.syncRuns).toEqual([])
    expect((await storedRows(t, panelId)).map((r) => r.data)).toEqual([{ MRN: '1', Name: 'Ada' }])
  })
})
