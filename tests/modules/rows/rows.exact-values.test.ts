import ExcelJS from 'exceljs'
// exceljs's own zip library: its reader drops an empty text cell, so the sheet's XML is read directly.
import JSZip from 'jszip'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authHeaders } from '../../helpers/auth.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { query, type RowsWorld, rowsWorld } from './fixtures.ts'

/**
 * Exact values (issue 10, docs/views-and-rows.md "Exact values"): "", [], a one-element array, 0 and
 * false come back as the source gave them, through materialisation, the rows endpoints, filters,
 * sorts, groups, aggregations and the json/excel/csv exports. Records come from a loopback API.
 */
const RECORDS = [
  {
    id: 'r1',
    resourceType: 'Patient',
    phone: '',
    tags: [],
    color: ['blue'],
    score: 0,
    flag: false,
    note: null,
    extra: { a: 1 },
    name: [{ given: ['Ann', 'Bo'] }],
    gender: '',
  },
  {
    id: 'r2',
    resourceType: 'Patient',
    phone: '555',
    tags: ['x', 'y'],
    color: 'red',
    score: 3,
    flag: true,
    name: [{ given: ['Cy'] }],
    gender: 'male',
  },
  { id: 'r3', resourceType: 'Patient' },
  { id: 'r4', resourceType: 'Patient', phone: null, tags: null, color: [], score: '', flag: '' },
]

const SOURCE_FIELD_COLUMNS: [name: string, sourceField: string, type: string][] = [
  ['Tel', 'phone', 'text'],
  ['Labels', 'tags', 'multi_select'],
  ['Color', 'color', 'text'],
  ['Score', 'score', 'number'],
  ['Flag', 'flag', 'boolean'],
  ['Note', 'note', 'text'],
  ['Extra', 'extra', 'json'],
]

let w: RowsWorld

beforeAll(async () => {
  // The fixture's own columns read fields these records lack; they stay null and are not looked at.
  w = await rowsWorld(RECORDS)
  for (const [name, sourceField, type] of SOURCE_FIELD_COLUMNS) {
    const res = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name, sourceField, type })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  }
  for (const body of [
    { name: 'Given', fhirPath: 'name.given' },
    { name: 'GivenAll', fhirPath: 'name.given', properties: { collection: true } },
    { name: 'Gender', fhirPath: 'gender' },
    { name: 'ColorPath', fhirPath: 'color' },
  ]) {
    const res = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { type: 'text', ...body })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  }
})
afterAll(() => w.server.close())

const NAMES = ['Tel', 'Labels', 'Color', 'Score', 'Flag', 'Note', 'Extra', 'Given', 'GivenAll', 'Gender', 'ColorPath']

async function rows(params: Record<string, unknown> = {}) {
  const res = await w.alice.get(`/api/panels/${w.panelId}/rows${query({ limit: 100, ...params })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

const keyOf = (id: number) => Object.entries(w.ids).find(([, v]) => v === id)?.[0]
const pick = (row: Record<string, unknown>) => Object.fromEntries(NAMES.map((n) => [n, row[n]]))

async function matching(columnTitle: string, operator: string, value?: unknown) {
  const body = await rows({ filters: [{ columnTitle, operator, value }] })
  return body.data.map((r: { _id: number }) => keyOf(r._id)).sort()
}

describe('cells keep the values the source gave', () => {
  it('answers "", [], one-element arrays, 0, false and objects exactly', async () => {
    const body = await rows({ sort: 'Tel' })
    const byKey = Object.fromEntries(body.data.map((r: Record<string, unknown>) => [keyOf(r._id as number), pick(r)]))
    expect(byKey.r1).toEqual({
      Tel: '',
      Labels: [],
      Color: ['blue'],
      Score: 0,
      Flag: false,
      Note: null,
      Extra: { a: 1 },
      Given: ['Ann', 'Bo'],
      GivenAll: ['Ann', 'Bo'],
      Gender: '',
      ColorPath: 'blue',
    })
    expect(byKey.r2).toEqual({
      Tel: '555',
      Labels: ['x', 'y'],
      Color: 'red',
      Score: 3,
      Flag: true,
      Note: null,
      Extra: null,
      Given: 'Cy',
      GivenAll: ['Cy'],
      Gender: 'male',
      ColorPath: 'red',
    })
    expect(byKey.r3).toEqual({
      Tel: null,
      Labels: null,
      Color: null,
      Score: null,
      Flag: null,
      Note: null,
      Extra: null,
      Given: null,
      GivenAll: [],
      Gender: null,
      ColorPath: null,
    })
    // A typed column converts text: "" has no number or boolean in it (issue 20), whatever the format.
    expect(byKey.r4).toMatchObject({ Tel: null, Labels: null, Color: [], Score: null, Flag: null, GivenAll: [], ColorPath: null })
  })
})

describe('filters tell blanks from nulls', () => {
  it.each([
    ['Tel', 'isNull', ['r3', 'r4']],
    ['Tel', 'isNotNull', ['r1', 'r2']],
    ['Tel', 'isEmpty', ['r1', 'r3', 'r4']],
    ['Tel', 'isNotEmpty', ['r2']],
    ['Labels', 'isNull', ['r3', 'r4']],
    ['Labels', 'isEmpty', ['r1', 'r3', 'r4']],
    ['Color', 'isNull', ['r3']],
    ['Color', 'isEmpty', ['r3', 'r4']],
    ['Gender', 'isNull', ['r3', 'r4']],
    ['Gender', 'isEmpty', ['r1', 'r3', 'r4']],
    ['Score', 'isNull', ['r3', 'r4']],
    ['Score', 'isEmpty', ['r3', 'r4']],
  ])('%s %s', async (column, operator, expected) => {
    expect(await matching(column, operator)).toEqual(expected)
  })

  it('matches an element of a one-element array, 0 and false, and never a blank in a number column', async () => {
    expect(await matching('Color', 'equals', 'BLUE')).toEqual(['r1'])
    expect(await matching('Color', 'notEquals', 'blue')).toEqual(['r2', 'r3', 'r4'])
    expect(await matching('Score', 'equals', 0)).toEqual(['r1'])
    expect(await matching('Score', 'lessThan', 1)).toEqual(['r1'])
    expect(await matching('Score', 'greaterThan', -1)).toEqual(['r1', 'r2'])
    expect(await matching('Flag', 'equals', false)).toEqual(['r1'])
  })
})

describe('sorts, groups and aggregations', () => {
  it('sorts null, "" and [] as blanks, last, ties by row id', async () => {
    const body = await rows({ sort: 'Score', order: 'asc' })
    expect(body.data.map((r: { _id: number }) => keyOf(r._id))).toEqual(['r1', 'r2', 'r3', 'r4'])
    const tags = await rows({ sort: 'Labels', order: 'desc' })
    expect(tags.data.map((r: { _id: number }) => keyOf(r._id))).toEqual(['r2', 'r1', 'r3', 'r4'])
  })

  it('groups "" apart from null and counts only non-blank cells', async () => {
    const view = await w.alice.post('/api/views', {
      name: 'Tels',
      panelId: w.panelId,
      config: { groupBy: ['Tel'] },
      aggregations: [
        { columnTitle: 'Tel', function: 'count' },
        { columnTitle: 'Score', function: 'count' },
        { columnTitle: 'Score', function: 'sum' },
        { columnTitle: 'Flag', function: 'count' },
        { columnTitle: 'Labels', function: 'count' },
        { columnTitle: 'Color', function: 'distinct' },
      ],
    })
    expect(view.status, JSON.stringify(view.body)).toBe(201)
    const res = await w.alice.get(`/api/views/${view.body.id}/rows`)
    expect(res.status).toBe(200)
    expect(res.body.aggregations).toEqual({
      'count(Tel)': 1,
      'count(Score)': 2,
      'sum(Score)': 3,
      'count(Flag)': 2,
      'count(Labels)': 1,
      'distinct(Color)': 2,
    })
    expect(res.body.groups.map((g: { key: unknown; count: number }) => [g.key, g.count])).toEqual([
      [{ Tel: '555' }, 1],
      [{ Tel: '' }, 1],
      [{ Tel: null }, 2],
    ])
  })
})

describe('exports', () => {
  let viewId: number
  beforeAll(async () => {
    const view = await w.alice.post('/api/views', {
      name: 'Exact',
      panelId: w.panelId,
      config: { columns: ['Tel', 'Labels', 'Color', 'Score', 'Flag'] },
      sorting: [{ columnTitle: 'Score', direction: 'asc' }],
    })
    expect(view.status).toBe(201)
    viewId = view.body.id
  })
  const download = async (format: string) => {
    const res = await w.t.app.request(`/api/views/${viewId}/export?format=${format}`, {
      headers: await authHeaders('tenant-a', 'alice'),
    })
    expect(res.status).toBe(200)
    return res
  }

  it('json writes every value exactly', async () => {
    const body = await (await download('json')).json()
    expect(body).toEqual([
      { Tel: '', Labels: [], Color: ['blue'], Score: 0, Flag: false },
      { Tel: '555', Labels: ['x', 'y'], Color: 'red', Score: 3, Flag: true },
      { Tel: null, Labels: null, Color: null, Score: null, Flag: null },
      { Tel: null, Labels: null, Color: [], Score: null, Flag: null },
    ])
  })

  it('csv writes "" and [] as a quoted empty field, null as an empty one', async () => {
    const lines = (await (await download('csv')).text()).split('\r\n')
    expect(lines.slice(0, 5)).toEqual([
      'Tel,Labels,Color,Score,Flag',
      '"","",blue,0,false',
      '555,x; y,red,3,true',
      ',,,,',
      ',,"",,',
    ])
  })

  it.skipIf(onTarget('workers', SKIP.workersXlsx))(
    'excel keeps "" as a text cell, lists as their JSON text, null as no cell',
    async () => {
      const bytes = await (await download('excel')).arrayBuffer()
      const workbook = new ExcelJS.Workbook()
      await workbook.xlsx.load(bytes)
      const sheet = workbook.worksheets[0]
      const values = (n: number) => (sheet.getRow(n).values as unknown[]).slice(1)
      expect(values(2).slice(1)).toEqual(['[]', '["blue"]', 0, false])
      expect(values(3)).toEqual(['555', '["x","y"]', 'red', 3, true])
      expect(values(4)).toEqual([])
      const xml = await (await JSZip.loadAsync(bytes)).file('xl/worksheets/sheet1.xml')?.async('string')
      expect(xml).toMatch(/<c r="A2" t="str"><v><\/v><\/c>/)
      expect(xml).not.toMatch(/<c r="A4"/)
    },
  )
})

describe('which path a column reads by', () => {
  it('a column moved from its source field to a FHIRPath takes SQL-on-FHIR values', async () => {
    const col = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name: 'Col2', sourceField: 'color' })
    expect(col.status).toBe(201)
    const before = await rows({ filters: [{ columnTitle: 'Col2', operator: 'isNotNull' }], sort: 'Score' })
    expect(before.data.map((r: Record<string, unknown>) => r.Col2)).toEqual([['blue'], 'red', []])
    const put = await w.alice.put(`/api/columns/${col.body.id}`, { fhirPath: 'color' })
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    expect(put.body).toMatchObject({ fhirPath: 'color', sourceField: 'color' })
    const after = await rows({ filters: [{ columnTitle: 'Col2', operator: 'isNotNull' }], sort: 'Score' })
    expect(after.data.map((r: Record<string, unknown>) => r.Col2)).toEqual(['blue', 'red'])
  })
})
