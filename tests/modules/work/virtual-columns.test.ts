import { sql } from 'drizzle-orm'
import ExcelJS from 'exceljs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { prepareRows } from '../../../src/rowstore/query/prepare.ts'
import { makeTestApp, serviceCtx, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { deliverSigned } from '../../helpers/view-definitions.ts'
import { setWorkState } from '../../helpers/work-state.ts'
import { query } from '../rows/fixtures.ts'
import { importRows } from '../rows/import.fixtures.ts'

/**
 * The virtual columns of the work state (WORKLIST.md §2, docs/worklist.md): `_status`,
 * `_assignee`, `_claimExpiresAt`, `_dueAt`, `_snoozedUntil`, `_overdue`, `_snoozed` and
 * `_commentCount` work where a column title works — filters, cohort rules, sorting, groupBy,
 * aggregations, search, column choices, exports — computed against the service's clock (the test
 * clock stands at 2026-01-01T12:00Z), with `@me` as the reader.
 *
 * | row | status      | assignee (claim until)   | dueAt       | snoozedUntil | comments |
 * |-----|-------------|--------------------------|-------------|--------------|----------|
 * | p1  | in_progress | alice (01-02 00:00)      | 01-01 10:00 |              | 0        |
 * | p2  | done        | bob (held)               | 01-01 09:00 |              | 0        |
 * | p3  | open        |                          | 01-03 00:00 | 01-02 00:00  | 0        |
 * | p4  | never worked                                                                       |
 * | p5  | open        | bob (expired 01-01 11:00)|             | 01-01 11:00  | 2        |
 */

const PATIENTS = [
  { id: 'p1', name: 'Ada', age: 40 },
  { id: 'p2', name: 'Grace', age: 45 },
  { id: 'p3', name: 'Alan', age: 20 },
  { id: 'p4', name: 'Linus', age: 30 },
  { id: 'p5', name: 'Zoe', age: 29 },
]

let server: FixtureServer
let t: TestApp
let alice: TestClient
let bob: TestClient
let panelId: number
let sourceId: number
/** `_id` by patient id. */
let ids: Record<string, number>

beforeAll(async () => {
  server = await startJsonServer((_req, res) => sendJson(res, 200, PATIENTS))
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  for (const column of [
    { name: 'Id', sourceField: 'id' },
    { name: 'Name', sourceField: 'name' },
    { name: 'Age', sourceField: 'age', type: 'number' },
  ]) {
    expect((await alice.post(`/api/panels/${panelId}/columns/base`, column)).status).toBe(201)
  }
  const source = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${server.url}/patients`, keyField: 'id' },
  })
  expect(source.body.syncStatus).toBe('success')
  sourceId = source.body.id
  const rows = (await alice.get(`/api/panels/${panelId}/rows?limit=100`)).body.data as { _id: number; _key: string }[]
  ids = Object.fromEntries(rows.map((r) => [r._key, r._id]))
  await setWorkState(t, ids.p1, {
    status: 'in_progress',
    assignee: 'alice',
    claimedAt: '2026-01-01T08:00:00.000Z',
    claimExpiresAt: '2026-01-02T00:00:00.000Z',
    dueAt: '2026-01-01T10:00:00.000Z',
  })
  await setWorkState(t, ids.p2, { status: 'done', assignee: 'bob', dueAt: '2026-01-01T09:00:00.000Z' })
  await setWorkState(t, ids.p3, { dueAt: '2026-01-03T00:00:00.000Z', snoozedUntil: '2026-01-02T00:00:00.000Z' })
  await setWorkState(t, ids.p5, {
    assignee: 'bob',
    claimExpiresAt: '2026-01-01T11:00:00.000Z',
    snoozedUntil: '2026-01-01T11:00:00.000Z',
    commentCount: 2,
  })
})
afterAll(() => server.close())

type Row = Record<string, unknown> & { _id: number; _key: string }
const keys = (body: { data: Row[] }) => body.data.map((r) => r._key)

async function createView(body: Record<string, unknown>, who: TestClient = alice): Promise<number> {
  const res = await who.post('/api/views', { name: 'Worklist', panelId, ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body.id
}

async function viewRows(view: number, params: Record<string, unknown> = {}, who: TestClient = alice) {
  const res = await who.get(`/api/views/${view}/rows${query({ limit: 100, ...params })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

async function panelRows(params: Record<string, unknown> = {}, who: TestClient = alice) {
  const res = await who.get(`/api/panels/${panelId}/rows${query({ limit: 100, ...params })}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

const sorted = (list: string[]) => [...list].sort()

describe('filters', () => {
  it('on _status: equals, in and notEquals, in a view and in a request', async () => {
    const equals = await createView({ filters: [{ columnTitle: '_status', operator: 'equals', value: 'IN_PROGRESS' }] })
    expect(keys(await viewRows(equals))).toEqual(['p1'])
    const among = await createView({ filters: [{ columnTitle: '_status', operator: 'in', value: ['open', 'done'] }] })
    expect(sorted(keys(await viewRows(among)))).toEqual(['p2', 'p3', 'p4', 'p5'])
    const not = await panelRows({ filters: [{ columnTitle: '_status', operator: 'notEquals', value: 'open' }] })
    expect(sorted(keys(not))).toEqual(['p1', 'p2'])
  })

  it('on _assignee with @me: each reader their own rows, in a view and in a request; an expired claim is nobody', async () => {
    const mine = await createView({ filters: [{ columnTitle: '_assignee', operator: 'equals', value: '@me' }] })
    expect(keys(await viewRows(mine))).toEqual(['p1'])
    expect((await alice.post(`/api/views/${mine}/publish`)).status).toBe(200)
    // p5 was bob's, but its claim expired at 11:00.
    expect(keys(await viewRows(mine, {}, bob))).toEqual(['p2'])
    const me = [{ columnTitle: '_assignee', operator: 'in', value: ['@me'] }]
    expect(keys(await panelRows({ filters: me }))).toEqual(['p1'])
    const admin = clientFor(t.app, 'tenant-a', 'bob', { role: 'admin' })
    expect(keys(await panelRows({ filters: me }, admin))).toEqual(['p2'])
    const nobody = await panelRows({ filters: [{ columnTitle: '_assignee', operator: 'isNull' }] })
    expect(sorted(keys(nobody))).toEqual(['p3', 'p4', 'p5'])
  })

  it('on _overdue (due in the past and not done) and _snoozed (until a time to come)', async () => {
    const overdue = await panelRows({ filters: [{ columnTitle: '_overdue', operator: 'equals', value: true }] })
    expect(keys(overdue)).toEqual(['p1'])
    const notOverdue = await panelRows({ filters: [{ columnTitle: '_overdue', operator: 'equals', value: false }] })
    expect(sorted(keys(notOverdue))).toEqual(['p2', 'p3', 'p4', 'p5'])
    const snoozed = await createView({ filters: [{ columnTitle: '_snoozed', operator: 'equals', value: false }] })
    expect(sorted(keys(await viewRows(snoozed)))).toEqual(['p1', 'p2', 'p4', 'p5'])
  })

  it('moves with the clock: a due time that passes makes the row overdue, a snooze that ends wakes it', async () => {
    t.clock.set('2026-01-03T06:00:00.000Z')
    try {
      const overdue = await panelRows({ filters: [{ columnTitle: '_overdue', operator: 'equals', value: true }] })
      expect(keys(overdue)).toEqual(['p1', 'p3'])
      const snoozed = await panelRows({ filters: [{ columnTitle: '_snoozed', operator: 'equals', value: true }] })
      expect(keys(snoozed)).toEqual([])
      // p1's claim ended at 01-02 00:00.
      const claimed = await panelRows({ filters: [{ columnTitle: '_assignee', operator: 'isNotNull' }] })
      expect(keys(claimed)).toEqual(['p2'])
    } finally {
      t.clock.set('2026-01-01T12:00:00.000Z')
    }
  })

  it('on the dates and the count, with the operators of their kinds; @me inside a nested group', async () => {
    const before = await panelRows({ filters: [{ columnTitle: '_dueAt', operator: 'lessThan', value: '2026-01-01T09:30:00Z' }] })
    expect(keys(before)).toEqual(['p2'])
    const between = await panelRows({
      filters: [{ columnTitle: '_dueAt', operator: 'between', value: ['2026-01-01', '2026-01-02'] }],
    })
    expect(sorted(keys(between))).toEqual(['p1', 'p2'])
    const undated = await panelRows({ filters: [{ columnTitle: '_dueAt', operator: 'isEmpty' }] })
    expect(sorted(keys(undated))).toEqual(['p4', 'p5'])
    const snoozeSet = await panelRows({ filters: [{ columnTitle: '_snoozedUntil', operator: 'isNotNull' }] })
    expect(sorted(keys(snoozeSet))).toEqual(['p3', 'p5'])
    const discussed = await panelRows({ filters: [{ columnTitle: '_commentCount', operator: 'greaterThan', value: 1 }] })
    expect(keys(discussed)).toEqual(['p5'])
    const nested = await panelRows({
      filters: [
        {
          logicalOperator: 'OR',
          conditions: [
            { columnTitle: '_assignee', operator: 'equals', value: '@me' },
            { columnTitle: '_status', operator: 'equals', value: 'done' },
          ],
        },
      ],
    })
    expect(sorted(keys(nested))).toEqual(['p1', 'p2'])
  })

  it('a cohort rule on _status', async () => {
    const rule = { conditions: [{ field: '_status', operator: 'notEquals', value: 'done' }], logic: 'AND' }
    const put = await alice.put(`/api/panels/${panelId}`, { cohortRule: rule })
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    try {
      expect(sorted(keys(await panelRows()))).toEqual(['p1', 'p3', 'p4', 'p5'])
    } finally {
      expect((await alice.put(`/api/panels/${panelId}`, { cohortRule: { conditions: [], logic: 'AND' } })).status).toBe(200)
    }
    expect((await panelRows()).meta.total).toBe(5)
  })
})

describe('sorting, groups and search', () => {
  it('sorts by _dueAt, blanks last in either direction', async () => {
    const asc = await createView({ sorting: [{ columnTitle: '_dueAt', direction: 'asc' }] })
    expect(keys(await viewRows(asc))).toEqual(['p2', 'p1', 'p3', 'p4', 'p5'])
    const desc = await createView({ sorting: [{ columnTitle: '_dueAt', direction: 'desc' }] })
    expect(keys(await viewRows(desc))).toEqual(['p3', 'p1', 'p2', 'p4', 'p5'])
    expect(keys(await panelRows({ sort: '_commentCount', order: 'desc' }))[0]).toBe('p5')
  })

  it('sorts by _status in a custom order', async () => {
    const view = await createView({
      sorting: [
        { columnTitle: '_status', direction: 'asc', customOrder: ['in_progress', 'open'], priority: 1 },
        { columnTitle: 'Id', direction: 'desc', priority: 2 },
      ],
    })
    expect(keys(await viewRows(view))).toEqual(['p1', 'p5', 'p4', 'p3', 'p2'])
  })

  it('groups by _status with a count', async () => {
    const view = await createView({
      config: { groupBy: ['_status'] },
      aggregations: [
        { columnTitle: '_status', function: 'count', alias: 'rows' },
        { columnTitle: '_commentCount', function: 'sum' },
      ],
    })
    const body = await viewRows(view)
    expect(body.aggregations).toEqual({ rows: 5, 'sum(_commentCount)': 2 })
    expect(body.groups).toEqual([
      { key: { _status: 'done' }, count: 1, aggregations: { rows: 1, 'sum(_commentCount)': 0 } },
      { key: { _status: 'in_progress' }, count: 1, aggregations: { rows: 1, 'sum(_commentCount)': 0 } },
      { key: { _status: 'open' }, count: 3, aggregations: { rows: 3, 'sum(_commentCount)': 2 } },
    ])
    expect(keys(body)).toEqual(['p2', 'p1', 'p3', 'p4', 'p5'])
  })

  it('searches _status and _assignee when searchFields names them', async () => {
    expect(keys(await panelRows({ search: 'PROGRESS', searchFields: '_status' }))).toEqual(['p1'])
    expect(keys(await panelRows({ search: 'bob', searchFields: '_assignee' }))).toEqual(['p2'])
    // By default only the text columns are searched.
    expect(keys(await panelRows({ search: 'progress' }))).toEqual([])
  })
})

describe('the row index', () => {
  it('serves a query on virtual columns: the work fields are read from the index, not from each row', async () => {
    const ctx = serviceCtx(t.deps, 'tenant-a', 'alice')
    const q = await prepareRows(
      ctx,
      { panel: { id: panelId, cohortRule: { conditions: [], logic: 'AND' } } },
      {
        filters: [
          { columnTitle: '_status', operator: 'notEquals', value: 'done' },
          { columnTitle: '_overdue', operator: 'equals', value: false },
          { columnTitle: '_assignee', operator: 'isNull' },
        ],
        sort: '_dueAt',
      },
    )
    const dialect = (t.deps.db as unknown as { dialect: { sqlToQuery(s: unknown): { sql: string; params: unknown[] } } }).dialect
    const { sql: text, params } = dialect.sqlToQuery(q.scope)
    const indexes = await t.client.execute({
      sql: `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND name LIKE ?`,
      args: [`records_p${panelId}_%`],
    })
    expect(indexes.rows).toHaveLength(1)
    const plan = await t.client.execute({ sql: `EXPLAIN QUERY PLAN SELECT count(*) ${text}`, args: params as never[] })
    expect(plan.rows.map((r) => String(r.detail)).join(' | ')).toContain(`USING INDEX ${indexes.rows[0].name}`)
    const program = await t.client.execute({ sql: `EXPLAIN SELECT count(*) ${text}`, args: params as never[] })
    expect(program.rows.filter((r) => r.opcode === 'Function' && String(r.p4).startsWith('->>'))).toEqual([])
  })
})

describe('column choices', () => {
  const NAMED = [
    'Name',
    '_status',
    '_assignee',
    '_claimExpiresAt',
    '_dueAt',
    '_snoozedUntil',
    '_overdue',
    '_snoozed',
    '_commentCount',
  ]

  it('shows the virtual columns a view names, in its order: booleans as true/false, open and 0 for a row never worked', async () => {
    const view = await createView({ config: { columns: NAMED } })
    const body = await viewRows(view, { sort: 'Id' })
    expect(body.data.map((r: Row) => Object.keys(r))).toEqual(body.data.map(() => ['_id', '_key', '_source', ...NAMED]))
    const byKey = Object.fromEntries(body.data.map((r: Row) => [r._key, r]))
    const row = (id: string, values: Record<string, unknown>) => ({ _id: ids[id], _key: id, _source: sourceId, ...values })
    expect(byKey).toEqual({
      p1: row('p1', {
        Name: 'Ada',
        _status: 'in_progress',
        _assignee: 'alice',
        _claimExpiresAt: '2026-01-02T00:00:00.000Z',
        _dueAt: '2026-01-01T10:00:00.000Z',
        _snoozedUntil: null,
        _overdue: true,
        _snoozed: false,
        _commentCount: 0,
      }),
      p2: row('p2', {
        Name: 'Grace',
        _status: 'done',
        _assignee: 'bob',
        _claimExpiresAt: null,
        _dueAt: '2026-01-01T09:00:00.000Z',
        _snoozedUntil: null,
        _overdue: false,
        _snoozed: false,
        _commentCount: 0,
      }),
      p3: row('p3', {
        Name: 'Alan',
        _status: 'open',
        _assignee: null,
        _claimExpiresAt: null,
        _dueAt: '2026-01-03T00:00:00.000Z',
        _snoozedUntil: '2026-01-02T00:00:00.000Z',
        _overdue: false,
        _snoozed: true,
        _commentCount: 0,
      }),
      p4: row('p4', {
        Name: 'Linus',
        _status: 'open',
        _assignee: null,
        _claimExpiresAt: null,
        _dueAt: null,
        _snoozedUntil: null,
        _overdue: false,
        _snoozed: false,
        _commentCount: 0,
      }),
      p5: row('p5', {
        Name: 'Zoe',
        _status: 'open',
        _assignee: null,
        _claimExpiresAt: null,
        _dueAt: null,
        _snoozedUntil: '2026-01-01T11:00:00.000Z',
        _overdue: false,
        _snoozed: false,
        _commentCount: 2,
      }),
    })
  })

  it('a view naming none, and the panel rows, answer no virtual key', async () => {
    const plain = await createView({ filters: [{ columnTitle: '_status', operator: 'equals', value: 'open' }] })
    const rows = (await viewRows(plain)).data as Row[]
    expect(rows.map((r) => Object.keys(r))).toEqual(rows.map(() => ['_id', '_key', '_source', 'Id', 'Name', 'Age']))
    const panel = (await panelRows()).data as Row[]
    expect(new Set(panel.flatMap((r) => Object.keys(r)))).toEqual(new Set(['_id', '_key', '_source', 'Id', 'Name', 'Age']))
  })

  it('no column may take the name of a virtual column: created, renamed or made by an import', async () => {
    const refused = async (res: { status: number; body: any }, path: string) => {
      expect(res.status, JSON.stringify(res.body)).toBe(400)
      expect(res.body).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ path, message: expect.stringContaining('virtual') }],
      })
    }
    await refused(await alice.post(`/api/panels/${panelId}/columns/base`, { name: '_status', sourceField: 'name' }), 'name')
    await refused(await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: '_overdue', formula: '1' }), 'name')
    const other = await alice.post(`/api/panels/${panelId}/columns/base`, { name: '_other', sourceField: 'name' })
    expect(other.status).toBe(201)
    await refused(await alice.put(`/api/columns/${other.body.id}`, { name: '_commentCount' }), 'name')
    expect((await alice.delete(`/api/columns/${other.body.id}`)).status).toBe(204)
    const config = {
      format: 'json',
      mapping: [{ sourceField: 'name', targetColumn: '_assignee' }],
      options: { createColumns: true },
    }
    await refused(await importRows(t, panelId, config, [{ name: 'x' }]), 'config.mapping.0.targetColumn')
    const columns = (await alice.get(`/api/panels/${panelId}/columns`)).body
    expect(JSON.stringify(columns)).not.toMatch(/"name":"_/)
  })
})

describe('exports', () => {
  async function download(view: number, format: 'csv' | 'json') {
    const res = await t.app.request(`/api/views/${view}/export?format=${format}`, {
      headers: await authHeaders('tenant-a', 'alice'),
    })
    expect(res.status).toBe(200)
    return res.text()
  }

  it('carry the virtual columns a view names (csv and json), and nothing more for a view naming none', async () => {
    const view = await createView({
      config: { columns: ['Id', '_status', '_overdue', '_dueAt', '_commentCount'] },
      sorting: [{ columnTitle: 'Id', direction: 'asc' }],
      filters: [{ columnTitle: 'Id', operator: 'in', value: ['p1', 'p4', 'p5'] }],
    })
    expect(JSON.parse(await download(view, 'json'))).toEqual([
      { Id: 'p1', _status: 'in_progress', _overdue: true, _dueAt: '2026-01-01T10:00:00.000Z', _commentCount: 0 },
      { Id: 'p4', _status: 'open', _overdue: false, _dueAt: null, _commentCount: 0 },
      { Id: 'p5', _status: 'open', _overdue: false, _dueAt: null, _commentCount: 2 },
    ])
    expect(await download(view, 'csv')).toBe(
      'Id,_status,_overdue,_dueAt,_commentCount\r\n' +
        'p1,in_progress,true,2026-01-01T10:00:00.000Z,0\r\np4,open,false,,0\r\np5,open,false,,2\r\n',
    )
    const plain = await createView({
      sorting: [{ columnTitle: 'Id', direction: 'asc' }],
      filters: [{ columnTitle: '_status', operator: 'equals', value: 'done' }],
    })
    expect(JSON.parse(await download(plain, 'json'))).toEqual([{ Id: 'p2', Name: 'Grace', Age: 45 }])
  })

  it.skipIf(onTarget('workers', SKIP.workersXlsx))(
    'excel holds each as its kind: dates as dates, booleans and counts as such',
    async () => {
      const view = await createView({
        config: { columns: ['Id', '_status', '_overdue', '_dueAt', '_commentCount'] },
        filters: [{ columnTitle: 'Id', operator: 'equals', value: 'p1' }],
      })
      const xlsx = await t.app.request(`/api/views/${view}/export?format=excel`, {
        headers: await authHeaders('tenant-a', 'alice'),
      })
      expect(xlsx.status).toBe(200)
      const workbook = new ExcelJS.Workbook()
      await workbook.xlsx.load(await xlsx.arrayBuffer())
      const sheet = workbook.worksheets[0]
      expect(sheet.getRow(1).values).toEqual([undefined, 'Id', '_status', '_overdue', '_dueAt', '_commentCount'])
      expect(sheet.getRow(2).values).toEqual([undefined, 'p1', 'in_progress', true, new Date('2026-01-01T10:00:00.000Z'), 0])
    },
  )
})

describe('membership', () => {
  it('a view filtering on _status gets row.entered and row.left when its rows are written after a work change', async () => {
    const secret = 'whsec-virtual-0123456789'
    const w = await makeTestApp()
    const owner = clientFor(w.app, 'tenant-a', 'alice')
    const panel = (await owner.post('/api/panels', { name: 'Pushed', tenantId: 'tenant-a', userId: 'alice' })).body.id
    expect((await owner.post(`/api/panels/${panel}/columns/base`, { name: 'Name', sourceField: 'name' })).status).toBe(201)
    const source = await owner.post(`/api/panels/${panel}/datasources`, {
      type: 'webhook',
      config: { endpoint: 'virtual-ward', secret, keyField: 'id', events: ['data.created', 'data.updated'] },
    })
    expect(source.status).toBe(201)
    const view = (
      await owner.post('/api/views', {
        name: 'In progress',
        panelId: panel,
        filters: [{ columnTitle: '_status', operator: 'equals', value: 'in_progress' }],
        config: { columns: ['Name', '_status', '_overdue'] },
      })
    ).body.id
    const deliver = async (event: string, data: unknown) =>
      expect((await deliverSigned(w.app, 'virtual-ward', secret, { event, data })).status).toBe(200)
    const events = async (after: number) =>
      (
        await w.deps.db.all<{ seq: number; type: string; data: string }>(
          sql`SELECT seq, type, data FROM events WHERE view_id = ${view} AND seq > ${after} AND type LIKE 'row.%' ORDER BY seq`,
        )
      ).map((e) => ({ seq: Number(e.seq), type: e.type, data: JSON.parse(e.data) }))
    const head = async () => Number((await w.deps.db.all<{ n: number }>(sql`SELECT coalesce(max(seq), 0) AS n FROM events`))[0].n)

    await deliver('data.created', [
      { id: 'p1', name: 'Ada' },
      { id: 'p2', name: 'Grace' },
    ])
    expect(await events(0)).toEqual([])
    const rows = (await owner.get(`/api/panels/${panel}/rows`)).body.data as Row[]
    const p1 = rows.find((r) => r._key === 'p1') as Row
    // Due after the service's clock (2026-01-01T12:00Z): not overdue, in the event as in GET.
    await setWorkState(w, p1._id, { status: 'in_progress', dueAt: '2026-06-01T00:00:00.000Z' })
    let mark = await head()
    await deliver('data.updated', [{ id: 'p1', name: 'Ada' }])
    const entered = await events(mark)
    const shown = (await owner.get(`/api/views/${view}/rows`)).body.data as Row[]
    expect(shown).toEqual([
      { _id: p1._id, _key: 'p1', _source: source.body.id, Name: 'Ada', _status: 'in_progress', _overdue: false },
    ])
    expect(entered.map((e) => [e.type, e.data])).toEqual([['row.entered', { rowId: p1._id, key: 'p1', row: shown[0] }]])
    // A shown virtual column that changes is a row.updated.
    await setWorkState(w, p1._id, { dueAt: '2026-01-01T00:00:00.000Z' })
    mark = await head()
    await deliver('data.updated', [{ id: 'p1', name: 'Ada' }])
    expect((await events(mark)).map((e) => [e.type, e.data.previous?._overdue, e.data.row._overdue])).toEqual([
      ['row.updated', false, true],
    ])
    await setWorkState(w, p1._id, { status: 'done' })
    mark = await head()
    await deliver('data.updated', [{ id: 'p1', name: 'Ada' }])
    expect((await events(mark)).map((e) => [e.type, e.data.key])).toEqual([['row.left', 'p1']])
    expect((await owner.get(`/api/views/${view}/rows`)).body.data).toEqual([])
  })

  it('a view filtering on _assignee with @me moves as for its owner', async () => {
    const secret = 'whsec-virtual-me-0123456789'
    const w = await makeTestApp()
    const owner = clientFor(w.app, 'tenant-a', 'alice')
    const panel = (await owner.post('/api/panels', { name: 'Mine', tenantId: 'tenant-a', userId: 'alice' })).body.id
    expect((await owner.post(`/api/panels/${panel}/columns/base`, { name: 'Name', sourceField: 'name' })).status).toBe(201)
    const source = await owner.post(`/api/panels/${panel}/datasources`, {
      type: 'webhook',
      config: { endpoint: 'virtual-mine', secret, keyField: 'id', events: ['data.created', 'data.updated'] },
    })
    expect(source.status).toBe(201)
    const view = (
      await owner.post('/api/views', {
        name: 'Mine',
        panelId: panel,
        filters: [{ columnTitle: '_assignee', operator: 'equals', value: '@me' }],
      })
    ).body.id
    const deliver = async (event: string, data: unknown) =>
      expect((await deliverSigned(w.app, 'virtual-mine', secret, { event, data })).status).toBe(200)
    const patients = [
      { id: 'p1', name: 'Ada' },
      { id: 'p2', name: 'Grace' },
    ]
    await deliver('data.created', patients)
    const rows = (await owner.get(`/api/panels/${panel}/rows`)).body.data as Row[]
    const id = (key: string) => (rows.find((r) => r._key === key) as Row)._id
    await setWorkState(w, id('p1'), { assignee: 'bob' })
    await setWorkState(w, id('p2'), { assignee: 'alice' })
    await deliver('data.updated', patients)
    const moved = await w.deps.db.all<{ type: string; data: string }>(
      sql`SELECT type, data FROM events WHERE view_id = ${view} AND type LIKE 'row.%' ORDER BY seq`,
    )
    expect(moved.map((e) => [e.type, JSON.parse(e.data).key])).toEqual([['row.entered', 'p2']])
    expect(keys((await owner.get(`/api/views/${view}/rows`)).body)).toEqual(['p2'])
  })
})
