import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'

/** Source records with every kind of value the row tests need (blanks and arrays included). */
export const PATIENTS = [
  {
    id: 'p1',
    name: 'Ada',
    age: 36,
    birth: '1990-01-15',
    seen: '2024-03-01T10:00:00Z',
    active: true,
    tags: ['vip', 'diabetes'],
    city: 'London',
    phones: ['111', '222'],
  },
  {
    id: 'p2',
    name: 'grace',
    age: 45,
    birth: '1981-06-30',
    seen: '2024-03-02T23:30:00Z',
    active: false,
    tags: ['diabetes'],
    city: 'paris',
    phones: '333',
  },
  { id: 'p3', name: 'Alan', age: 41, birth: '1983-02-01', seen: '2024-02-28T08:00:00Z', active: true, tags: [], city: '' },
  { id: 'p4', name: 'Linus' },
  {
    id: 'p5',
    name: 'Zoe',
    age: 29,
    birth: '1995-12-31',
    seen: '2024-03-01T00:00:00Z',
    active: false,
    tags: ['VIP'],
    city: 'London',
  },
  {
    id: 'p6',
    name: 'Bob',
    age: 67,
    birth: '1957-04-04',
    seen: '2023-12-31T23:59:59Z',
    active: true,
    tags: ['cardio', 'diabetes'],
    city: 'Berlin',
    phones: ['444'],
  },
]

/** The base columns (name → sourceField, type) and one calculated column. */
export const BASE_COLUMNS: [string, string, string][] = [
  ['Name', 'name', 'text'],
  ['Age', 'age', 'number'],
  ['Birth', 'birth', 'date'],
  ['Seen', 'seen', 'datetime'],
  ['Active', 'active', 'boolean'],
  ['Tags', 'tags', 'multi_select'],
  ['City', 'city', 'text'],
  ['Phones', 'phones', 'text'],
]

export interface RowsWorld {
  t: TestApp
  server: FixtureServer
  /** Owner of the panel (tenant-a). */
  alice: TestClient
  /** Another user of tenant-a. */
  bob: TestClient
  /** A user of tenant-b. */
  eve: TestClient
  panelId: number
  sourceId: number
  columns: Record<string, number>
  /** Row id (`_id`, the row's lasting identity) by patient id. */
  ids: Record<string, number>
}

/**
 * A panel of alice's with an `api` source on a loopback server serving PATIENTS, the base
 * columns above and `Double` = `{Age} * 2`, all through the API (columns recompute the cells).
 */
export async function rowsWorld(patients: Record<string, unknown>[] = PATIENTS): Promise<RowsWorld> {
  const server = await startJsonServer((_req, res) => sendJson(res, 200, patients))
  const t = await makeTestApp()
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const bob = clientFor(t.app, 'tenant-a', 'bob')
  const eve = clientFor(t.app, 'tenant-b', 'eve')
  const panel = await alice.post('/api/panels', { name: 'Clinic', tenantId: 'tenant-a', userId: 'alice' })
  const panelId = panel.body.id as number
  const source = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${server.url}/patients`, keyField: 'id' },
    tenantId: 'tenant-a',
    userId: 'alice',
  })
  if (source.status !== 201 || source.body.syncStatus !== 'success')
    throw new Error(`source failed: ${JSON.stringify(source.body)}`)
  const columns: Record<string, number> = {}
  for (const [name, sourceField, type] of BASE_COLUMNS) {
    const res = await alice.post(`/api/panels/${panelId}/columns/base`, { name, sourceField, type })
    if (res.status !== 201) throw new Error(`column ${name} failed: ${JSON.stringify(res.body)}`)
    columns[name] = res.body.id
  }
  const calc = await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Double', formula: '{Age} * 2' })
  if (calc.status !== 201) throw new Error(`calculated column failed: ${JSON.stringify(calc.body)}`)
  columns.Double = calc.body.id
  const rows = await t.client.execute({ sql: 'SELECT row_id AS id, key FROM records WHERE panel_id = ?', args: [panelId] })
  const ids = Object.fromEntries(rows.rows.map((r) => [String(r.key), Number(r.id)]))
  return { t, server, alice, bob, eve, panelId, sourceId: source.body.id, columns, ids }
}

/** GET with query parameters (values JSON-encoded when not strings). */
export function query(params: Record<string, unknown>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, typeof v === 'string' ? v : JSON.stringify(v))
  const s = q.toString()
  return s ? `?${s}` : ''
}

/** Patient ids of a rows answer, in order. */
export const idsOf = (world: RowsWorld, body: { data: { _id: number }[] }) => {
  const byRecord = Object.fromEntries(Object.entries(world.ids).map(([k, v]) => [v, k]))
  return body.data.map((r) => byRecord[r._id])
}
