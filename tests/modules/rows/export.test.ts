import { gunzipSync } from 'node:zlib'
import ExcelJS from 'exceljs'
import Papa from 'papaparse'
import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { baseColumn, calculatedColumn, createPanel, importRows } from './import.fixtures.ts'

let t: TestApp
let alice: TestClient
let bob: TestClient
let panelId: number
let viewId: number

/** 80 patients: ages 20..99, admitted one day apart from 2026-01-01. */
const PATIENTS = Array.from({ length: 80 }, (_, i) => ({
  name: i === 0 ? '=cmd|calc' : `Patient ${i}`,
  age: 20 + i,
  admitted: new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10),
}))

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  panelId = await createPanel(alice)
  await createPanel(bob, 'Bob panel')
  await baseColumn(alice, panelId, { name: 'Name', sourceField: 'name' })
  await baseColumn(alice, panelId, { name: 'Age', sourceField: 'age', type: 'number' })
  await baseColumn(alice, panelId, { name: 'Admitted', sourceField: 'admitted', type: 'date' })
  await calculatedColumn(alice, panelId, { name: 'Months', formula: '{Age} * 12', type: 'number' })
  const mapping = ['Name', 'Age', 'Admitted'].map((c) => ({ sourceField: c.toLowerCase(), targetColumn: c }))
  const imported = await importRows(t, panelId, { format: 'json', mapping }, PATIENTS)
  expect(imported.body.rowsImported).toBe(80)
  const view = await alice.post('/api/views', {
    name: 'Over 30',
    panelId,
    config: { columns: ['Name', 'Age', 'Admitted', 'Months'], groupBy: [], layout: 'table' },
    filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
  })
  expect(view.status).toBe(201)
  viewId = view.body.id
})

async function download(query: string, user = 'alice', tenant = 'tenant-a') {
  const res = await t.app.request(`/api/views/${viewId}/export${query}`, { headers: await authHeaders(tenant, user) })
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) }
}

const text = (b: Uint8Array) => new TextDecoder().decode(b)

describe('GET /api/views/{id}/export', () => {
  it('streams csv of every matching row as an attachment, parsed back', async () => {
    const { res, bytes } = await download('?format=csv')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="over-30-20260101T120000Z\.csv"/)
    const parsed = Papa.parse<Record<string, string>>(text(bytes).trimEnd(), { header: true, newline: '\r\n' })
    expect(parsed.meta.fields).toEqual(['Name', 'Age', 'Admitted', 'Months'])
    expect(parsed.data).toHaveLength(70)
    expect(parsed.data[0]).toEqual({ Name: 'Patient 10', Age: '30', Admitted: '2026-01-11', Months: '360' })
    expect(parsed.data.every((r) => Number(r.Age) >= 30)).toBe(true)
  })

  it('neutralises formula injection in csv', async () => {
    await alice.put(`/api/views/${viewId}`, { filters: [] })
    const { bytes } = await download('?format=csv')
    expect(text(bytes).split('\r\n')[1]).toBe("'=cmd|calc,20,2026-01-01,240")
  })

  it('streams json, with the formulas when includeFormulas', async () => {
    const plain = JSON.parse(text((await download('?format=json')).bytes))
    expect(plain).toHaveLength(70)
    expect(plain[69]).toEqual({ Name: 'Patient 79', Age: 99, Admitted: '2026-03-21', Months: 1188 })
    const { res, bytes } = await download('?format=json&includeFormulas=true&maxRows=2')
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    const withFormulas = JSON.parse(text(bytes))
    expect(withFormulas.formulas).toEqual({ Months: '{Age} * 12' })
    expect(withFormulas.rows).toHaveLength(2)
  })

  it.skipIf(onTarget('workers', SKIP.workersXlsx))('writes xlsx that reads back', async () => {
    const { res, bytes } = await download('?format=excel&includeFormulas=true')
    expect(res.headers.get('content-disposition')).toContain('.xlsx')
    const workbook = new ExcelJS.Workbook()
    await workbook.xlsx.load(bytes.buffer as ArrayBuffer)
    const sheet = workbook.worksheets[0]
    expect(sheet.name).toBe('Over 30')
    expect(sheet.rowCount).toBe(72)
    expect(sheet.getRow(2).getCell(4).value).toBe('{Age} * 12')
    expect(sheet.getRow(3).values).toEqual([undefined, 'Patient 10', 30, new Date('2026-01-11T00:00:00Z'), 360])
  })

  it.skipIf(onTarget('workers', SKIP.workersPdf))('writes a paginated pdf', async () => {
    const { res, bytes } = await download('?format=pdf')
    expect(res.headers.get('content-type')).toBe('application/pdf')
    const pages = new TextDecoder('latin1').decode(bytes).match(/\/Type \/Page\b/g) ?? []
    expect(pages).toHaveLength(3)
  })

  it('gzips on request', async () => {
    const { res, bytes } = await download('?format=csv&compression=gzip&maxRows=5')
    expect(res.headers.get('content-type')).toBe('application/gzip')
    expect(res.headers.get('content-disposition')).toContain('.csv.gz')
    const csv = gunzipSync(bytes).toString('utf8')
    expect(csv.trimEnd().split('\r\n')).toHaveLength(6)
  })

  it('narrows to a date range, in bracket or JSON form, inclusive of both ends', async () => {
    const brackets = await download(
      '?format=json&dateRange[start]=2026-01-20&dateRange[end]=2026-01-24&dateRange[column]=Admitted',
    )
    expect(JSON.parse(text(brackets.bytes)).map((r: { Admitted: string }) => r.Admitted)).toEqual([
      '2026-01-20',
      '2026-01-21',
      '2026-01-22',
      '2026-01-23',
      '2026-01-24',
    ])
    const json = encodeURIComponent(JSON.stringify({ end: '2026-01-12' }))
    const byDefaultColumn = await download(`?format=json&dateRange=${json}`)
    expect(JSON.parse(text(byDefaultColumn.bytes))).toHaveLength(2)
    const backwards = await download('?format=csv&dateRange[start]=2026-02-01&dateRange[end]=2026-01-01')
    expect(backwards.res.status).toBe(400)
    const unknown = await download('?format=csv&dateRange[start]=2026-02-01&dateRange[column]=Nope')
    expect(unknown.res.status).toBe(400)
    expect(JSON.parse(text(unknown.bytes)).message).toContain('Nope')
  })

  it('answers 400 for an unknown format or a bad maxRows', async () => {
    expect((await download('?format=docx')).res.status).toBe(400)
    expect((await download('?maxRows=0')).res.status).toBe(400)
  })
})

describe('GET /api/views/{id}/export (access)', () => {
  const publish = (allowDownload?: boolean) =>
    alice.post(`/api/views/${viewId}/publish`, {
      publishConfig: { permissions: ['read'], userGroups: [], ...(allowDownload === undefined ? {} : { allowDownload }) },
    })

  it('answers 401 without a token and 403 when the query names another tenant', async () => {
    expect((await t.app.request(`/api/views/${viewId}/export?format=csv`)).status).toBe(401)
    expect((await download('?format=csv&tenantId=tenant-b')).res.status).toBe(403)
  })

  it("answers 404 for another tenant's view and for another user's unpublished view", async () => {
    const eve = await download('?format=csv', 'eve', 'tenant-b')
    expect(eve.res.status).toBe(404)
    expect(JSON.parse(text(eve.bytes)).message).toBe(`View ${viewId} not found for tenant tenant-b`)
    expect((await download('?format=csv', 'bob')).res.status).toBe(404)
  })

  it('lets other users download a published view unless allowDownload is false', async () => {
    await publish()
    expect((await download('?format=csv', 'bob')).res.status).toBe(200)
    await publish(false)
    const denied = await download('?format=csv', 'bob')
    expect(denied.res.status).toBe(403)
    expect(JSON.parse(text(denied.bytes)).code).toBe('FORBIDDEN')
    expect((await download('?format=csv', 'alice')).res.status).toBe(200)
    await publish(true)
    expect((await download('?format=json', 'bob')).res.status).toBe(200)
  })
})
