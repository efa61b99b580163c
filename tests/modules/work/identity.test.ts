import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MIGRATIONS_DIR } from '../../../src/runtime/migrate.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { deliverSigned, GIVEN_NAMES_VIEW } from '../../helpers/view-definitions.ts'
import { setWorkState, storedWorkState } from '../../helpers/work-state.ts'
import { importRows } from '../rows/import.fixtures.ts'

/**
 * Row identity (WORKLIST.md §1, docs/worklist.md "Row identity"): a row's `_id` is its identity
 * `(data source, key)`, the same for as long as that identity is in the panel, whatever rewrote the
 * stored record (full and incremental syncs, webhook deliveries, imports, recomputes, a replaced
 * ViewDefinition); a row that leaves and comes back is the same row, with its work state; `_key`
 * is answered beside `_id`. The identities go with their data source.
 */

interface Patient {
  id: string
  name: string
  age: number
}

const BEFORE: Patient[] = [
  { id: 'p1', name: 'Ada', age: 40 },
  { id: 'p2', name: 'Grace', age: 45 },
  { id: 'p3', name: 'Alan', age: 20 },
]

let api: FixtureServer
const served = { patients: BEFORE }
let filesDir: string

beforeAll(async () => {
  api = await startJsonServer((_req, res) => sendJson(res, 200, served.patients))
  filesDir = await mkdtemp(join(tmpdir(), 'row-identity-'))
})
afterAll(async () => {
  await api.close()
  await rm(filesDir, { recursive: true, force: true })
})

interface World {
  t: TestApp
  alice: TestClient
  panelId: number
}

/** A panel of alice's with the columns Name and Age. */
async function world(options: Parameters<typeof makeTestApp>[0] = {}): Promise<World> {
  const t = await makeTestApp(options)
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  for (const column of [
    { name: 'Name', sourceField: 'name' },
    { name: 'Age', sourceField: 'age', type: 'number' },
  ]) {
    expect((await alice.post(`/api/panels/${panelId}/columns/base`, column)).status).toBe(201)
  }
  return { t, alice, panelId }
}

/** An `api` source of the world's panel serving `patients` (keyed by `id` unless `keyField` is null), synchronised. */
async function apiSource(w: World, patients: Patient[], keyField: string | null = 'id'): Promise<number> {
  served.patients = patients
  const res = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${api.url}/patients`, ...(keyField ? { keyField } : {}) },
  })
  expect(res.body.syncStatus, JSON.stringify(res.body)).toBe('success')
  return res.body.id
}

async function sync(w: World, sourceId: number, patients?: Patient[]) {
  if (patients) served.patients = patients
  const res = await w.alice.post(`/api/datasources/${sourceId}/sync`, {})
  expect(res.body.syncStatus, JSON.stringify(res.body)).toBe('success')
}

type Row = Record<string, unknown> & { _id: number; _key: string; _source: number }

const panelRows = async (w: World): Promise<Row[]> => {
  const res = await w.alice.get(`/api/panels/${w.panelId}/rows?limit=100`)
  expect(res.status).toBe(200)
  return res.body.data
}

/** `_id` by `_key` of the panel's rows. */
const idsByKey = async (w: World): Promise<Record<string, number>> =>
  Object.fromEntries((await panelRows(w)).map((r) => [r._key, r._id]))

/** The stored record ids of the panel's visible rows by key (what `_id` is not). */
const recordIds = async (w: World): Promise<Record<string, number>> =>
  Object.fromEntries(
    (
      await w.t.deps.db.all<{ id: number; key: string }>(sql`SELECT r.id, r.key FROM records r
        JOIN data_sources s ON s.id = r.data_source_id AND r.generation = s.current_generation WHERE r.panel_id = ${w.panelId}`)
    ).map((r) => [r.key, Number(r.id)]),
  )

/** Each current record's generation, by key. */
const recordGenerations = async (w: World): Promise<Record<string, number>> =>
  Object.fromEntries(
    (
      await w.t.deps.db.all<{ generation: number; key: string }>(sql`SELECT r.generation, r.key FROM records r
        JOIN data_sources s ON s.id = r.data_source_id AND r.generation = s.current_generation WHERE r.panel_id = ${w.panelId}`)
    ).map((r) => [r.key, Number(r.generation)]),
  )

const identityCount = async (w: World, sourceId: number) =>
  Number(
    (await w.t.deps.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM row_identities WHERE data_source_id = ${sourceId}`))[0].n,
  )

async function createView(w: World, body: Record<string, unknown>): Promise<number> {
  const res = await w.alice.post('/api/views', { name: 'Worklist', panelId: w.panelId, ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body.id
}

describe('full syncs', () => {
  it('a re-sync of unchanged data writes new records but changes no _id', async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE)
    const ids = await idsByKey(w)
    expect(Object.keys(ids).sort()).toEqual(['p1', 'p2', 'p3'])
    const before = await recordGenerations(w)
    await sync(w, source, BEFORE)
    expect(await idsByKey(w)).toEqual(ids)
    // The sync wrote a new generation: every stored record is new, the rows are not. (A record's
    // own id may be reused once the old generation is gone: SQLite hands out the next free rowid.)
    const after = await recordGenerations(w)
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort())
    for (const key of Object.keys(before)) expect(after[key]).toBeGreaterThan(before[key])
  })

  it('a sync with changed data keeps the _id of kept keys and gives new keys new ids', async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE)
    const ids = await idsByKey(w)
    await sync(w, source, [
      { id: 'p1', name: 'Ada', age: 41 },
      { id: 'p2', name: 'Grace', age: 45 },
      { id: 'p4', name: 'Mary', age: 60 },
    ])
    const after = await idsByKey(w)
    expect(Object.keys(after).sort()).toEqual(['p1', 'p2', 'p4'])
    expect(after.p1).toBe(ids.p1)
    expect(after.p2).toBe(ids.p2)
    expect(Object.values(ids)).not.toContain(after.p4)
    expect((await panelRows(w)).find((r) => r._key === 'p1')).toMatchObject({ _id: ids.p1, _source: source, Age: 41 })
  })

  it('a row deleted at the source that comes back is the same row, with its work state back', async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE)
    const ids = await idsByKey(w)
    await setWorkState(w.t, ids.p2, { status: 'in_progress', assignee: 'bob' })
    const view = await createView(w, { config: { columns: ['Name', '_status', '_assignee'] } })
    await sync(w, source, [BEFORE[0], BEFORE[2]])
    expect(Object.keys(await idsByKey(w)).sort()).toEqual(['p1', 'p3'])
    // Out of the panel, its identity keeps its work.
    expect(await storedWorkState(w.t, ids.p2)).toMatchObject({ status: 'in_progress', assignee: 'bob', version: 1 })
    await sync(w, source, [...BEFORE, { id: 'p4', name: 'Mary', age: 60 }])
    const back = await idsByKey(w)
    expect(back).toMatchObject(ids)
    const rows = (await w.alice.get(`/api/views/${view}/rows?limit=100`)).body.data as Row[]
    expect(rows.find((r) => r._key === 'p2')).toEqual({
      _id: ids.p2,
      _key: 'p2',
      _source: source,
      Name: 'Grace',
      _status: 'in_progress',
      _assignee: 'bob',
    })
    expect(rows.find((r) => r._key === 'p4')).toMatchObject({ _status: 'open', _assignee: null })
  })

  it('work state stays with a row whose data a full sync changed', async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE)
    const ids = await idsByKey(w)
    await setWorkState(w.t, ids.p1, { status: 'done', dueAt: '2026-01-02T00:00:00.000Z' })
    await sync(w, source, [{ id: 'p1', name: 'Ada L.', age: 40 }, ...BEFORE.slice(1)])
    const view = await createView(w, { config: { columns: ['Name', '_status', '_dueAt'] } })
    const rows = (await w.alice.get(`/api/views/${view}/rows?limit=100`)).body.data as Row[]
    expect(rows.find((r) => r._key === 'p1')).toMatchObject({
      _id: ids.p1,
      Name: 'Ada L.',
      _status: 'done',
      _dueAt: '2026-01-02T00:00:00.000Z',
    })
  })
})

describe('other writers keep _id', () => {
  it('an incremental sync', { skip: onTarget('workers', SKIP.noSqlite) }, async () => {
    const w = await world({ filesDir })
    const db = createClient({ url: `file:${join(filesDir, 'ward.sqlite')}` })
    await db.executeMultiple(
      'DROP TABLE IF EXISTS ward; CREATE TABLE ward (id TEXT PRIMARY KEY, name TEXT, age INTEGER, seq INTEGER);',
    )
    const write = (patients: Patient[], seq: number) =>
      db.batch(
        patients.map((p) => ({
          sql: 'INSERT INTO ward VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, age = excluded.age, seq = excluded.seq',
          args: [p.id, p.name, p.age, seq],
        })),
      )
    await write(BEFORE, 1)
    const created = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
      type: 'database',
      config: { connectionString: 'file:ward.sqlite', table: 'ward', keyField: 'id', incrementalColumn: 'seq', batchSize: 100 },
    })
    expect(created.body.syncStatus).toBe('success')
    const ids = await idsByKey(w)
    await write(
      [
        { id: 'p1', name: 'Ada', age: 50 },
        { id: 'p4', name: 'Mary', age: 60 },
      ],
      2,
    )
    db.close()
    const synced = await w.alice.post(`/api/datasources/${created.body.id}/sync`, {})
    expect(synced.body).toMatchObject({ syncStatus: 'success', recordsProcessed: 2 })
    const after = await idsByKey(w)
    expect(after).toMatchObject(ids)
    expect(Object.values(ids)).not.toContain(after.p4)
    expect((await panelRows(w)).find((r) => r._key === 'p1')).toMatchObject({ _id: ids.p1, Age: 50 })
  })

  it('webhook deliveries: updates, a delete and the same key created again, and a snapshot', async () => {
    const w = await world()
    const secret = 'whsec-identity-0123456789'
    const source = await w.alice.post(`/api/panels/${w.panelId}/datasources`, {
      type: 'webhook',
      config: {
        endpoint: 'ward-identity',
        secret,
        keyField: 'id',
        events: ['data.created', 'data.updated', 'data.deleted', 'sync.started', 'sync.completed'],
      },
    })
    expect(source.status).toBe(201)
    const deliver = async (event: string, data?: unknown) =>
      expect((await deliverSigned(w.t.app, 'ward-identity', secret, { event, data })).status).toBe(200)
    await deliver('data.created', BEFORE)
    const ids = await idsByKey(w)
    expect(Object.keys(ids).sort()).toEqual(['p1', 'p2', 'p3'])
    await setWorkState(w.t, ids.p3, { status: 'in_progress' })
    await deliver('data.updated', [{ id: 'p1', name: 'Ada', age: 41 }])
    await deliver('data.deleted', { id: 'p3' })
    expect(Object.keys(await idsByKey(w)).sort()).toEqual(['p1', 'p2'])
    await deliver('data.created', [BEFORE[2]])
    expect(await idsByKey(w)).toEqual(ids)
    // A snapshot writes a new generation, switched to at its end.
    await deliver('sync.started')
    await deliver('data.created', [...BEFORE, { id: 'p4', name: 'Mary', age: 60 }])
    await deliver('sync.completed')
    const after = await idsByKey(w)
    expect(after).toMatchObject(ids)
    expect(Object.values(ids)).not.toContain(after.p4)
    const view = await createView(w, { config: { columns: ['_status'] } })
    const rows = (await w.alice.get(`/api/views/${view}/rows?limit=100`)).body.data as Row[]
    expect(Object.fromEntries(rows.map((r) => [r._key, r._status]))).toEqual({
      p1: 'open',
      p2: 'open',
      p3: 'in_progress',
      p4: 'open',
    })
  })

  it('an import that updates existing rows (updateExisting)', async () => {
    const w = await world()
    const config = (options: Record<string, unknown>) => ({
      format: 'json',
      mapping: [
        { sourceField: 'name', targetColumn: 'Name' },
        { sourceField: 'age', targetColumn: 'Age' },
      ],
      options,
      validation: { uniqueFields: ['Name'] },
    })
    expect((await importRows(w.t, w.panelId, config({}), BEFORE)).body).toMatchObject({ rowsImported: 3 })
    const byName = (rows: Row[]): Record<string, Row> => Object.fromEntries(rows.map((r) => [r.Name, r]))
    const before = byName(await panelRows(w))
    const res = await importRows(w.t, w.panelId, config({ updateExisting: true }), [
      { name: 'Ada', age: 50 },
      { name: 'Mary', age: 60 },
    ])
    expect(res.body).toMatchObject({ rowsImported: 1, rowsUpdated: 1, rowsRejected: 0 })
    const after = byName(await panelRows(w))
    for (const name of ['Ada', 'Grace', 'Alan']) {
      expect(after[name]).toMatchObject({ _id: before[name]._id, _key: before[name]._key })
    }
    expect(after.Ada.Age).toBe(50)
    expect(Object.values(before).map((r) => r._id)).not.toContain(after.Mary._id)
  })

  it('recomputes after column changes (added, changed, removed)', async () => {
    const w = await world()
    await apiSource(w, BEFORE)
    const ids = await idsByKey(w)
    const records = await recordIds(w)
    const added = await w.alice.post(`/api/panels/${w.panelId}/columns/calculated`, { name: 'Double', formula: '{Age} * 2' })
    expect(added.status).toBe(201)
    expect((await panelRows(w)).map((r) => r.Double).sort()).toEqual([40, 80, 90])
    expect(await idsByKey(w)).toEqual(ids)
    const changed = await w.alice.put(`/api/panels/${w.panelId}/columns/${added.body.id}`, { formula: '{Age} * 3' })
    expect(changed.status, JSON.stringify(changed.body)).toBe(200)
    expect((await panelRows(w)).map((r) => r.Double).sort()).toEqual([120, 135, 60])
    expect(await idsByKey(w)).toEqual(ids)
    expect((await w.alice.delete(`/api/panels/${w.panelId}/columns/${added.body.id}`)).status).toBe(204)
    expect(await idsByKey(w)).toEqual(ids)
    expect(await recordIds(w)).toEqual(records)
  })
})

describe('a panel defined by a ViewDefinition', () => {
  const SECRET = 'whsec-identity-vd-0123456789'
  const PATIENT = {
    resourceType: 'Patient',
    id: 'p1',
    gender: 'female',
    name: [
      { family: 'Smith', given: ['Ada', 'Q.'] },
      { family: 'Jones', given: ['Ada'] },
    ],
  }
  /** GIVEN_NAMES_VIEW with one more column: every row keeps its place (record key and position path). */
  const WITH_GENDER = {
    ...GIVEN_NAMES_VIEW,
    select: [
      {
        column: [
          { name: 'id', path: 'id' },
          { name: 'gender', path: 'gender' },
        ],
      },
      ...GIVEN_NAMES_VIEW.select.slice(1),
    ],
  }
  /** One row per name: the rows are at other places (`p1#name[0]`), new identities. */
  const NAMES_VIEW = {
    resourceType: 'ViewDefinition',
    resource: 'Patient',
    select: [{ column: [{ name: 'id', path: 'id' }] }, { forEach: 'name', column: [{ name: 'family', path: 'family' }] }],
  }

  it('keeps _id when the ViewDefinition is replaced by one whose rows keep their place, and gives moved rows new ids', async () => {
    const t = await makeTestApp()
    const alice = clientFor(t.app, 'tenant-a', 'alice')
    const panelId = (await alice.post('/api/panels', { name: 'Names', tenantId: 'tenant-a', userId: 'alice' })).body.id
    const w = { t, alice, panelId }
    const source = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'webhook',
      config: { endpoint: 'names-identity', secret: SECRET, events: ['data.created', 'data.updated'] },
    })
    expect(source.status).toBe(201)
    const put = async (viewResource: unknown) =>
      expect((await alice.put(`/api/panels/${panelId}/viewdefinition`, { viewResource })).status).toBe(200)
    await put(GIVEN_NAMES_VIEW)
    expect((await deliverSigned(t.app, 'names-identity', SECRET, { event: 'data.created', data: [PATIENT] })).status).toBe(200)
    const ids = await idsByKey(w)
    expect(Object.keys(ids).sort()).toEqual(['p1#name[0].given[0]', 'p1#name[0].given[1]', 'p1#name[1].given[0]'])
    expect(new Set(Object.values(ids)).size).toBe(3)
    await setWorkState(t, ids['p1#name[0].given[1]'], { status: 'in_progress' })

    await put(WITH_GENDER)
    const rows = await panelRows(w)
    expect(rows.map((r) => r.gender)).toEqual(['female', 'female', 'female'])
    expect(await idsByKey(w)).toEqual(ids)
    // A data update that keeps a row's place keeps its _id too.
    const renamed = { ...PATIENT, name: [{ family: 'Smith', given: ['Ada', 'Quinn'] }, PATIENT.name[1]] }
    expect((await deliverSigned(t.app, 'names-identity', SECRET, { event: 'data.updated', data: [renamed] })).status).toBe(200)
    expect(await idsByKey(w)).toEqual(ids)

    await put(NAMES_VIEW)
    const moved = await idsByKey(w)
    expect(Object.keys(moved).sort()).toEqual(['p1#name[0]', 'p1#name[1]'])
    for (const id of Object.values(moved)) expect(Object.values(ids)).not.toContain(id)

    // Back to the first shape: the same identities, the same rows, their work with them.
    await put(GIVEN_NAMES_VIEW)
    expect(await idsByKey(w)).toEqual(ids)
    const view = await createView(w, { config: { columns: ['given', '_status'] } })
    const shown = (await alice.get(`/api/views/${view}/rows?limit=100`)).body.data as Row[]
    expect(Object.fromEntries(shown.map((r) => [r._key, r._status]))).toEqual({
      'p1#name[0].given[0]': 'open',
      'p1#name[0].given[1]': 'in_progress',
      'p1#name[1].given[0]': 'open',
    })
  })
})

describe('_key', () => {
  it('is answered on panel rows, view rows and the rows of membership events', async () => {
    const w = await world()
    const view = await createView(w, {
      filters: [{ columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 30 }],
      config: { columns: ['Name'] },
    })
    const source = await apiSource(w, BEFORE)
    const panel = await panelRows(w)
    expect(panel.map((r) => Object.keys(r))).toEqual(panel.map(() => ['_id', '_key', '_source', 'Name', 'Age']))
    const rows = (await w.alice.get(`/api/views/${view}/rows?limit=100`)).body.data as Row[]
    const ids = await idsByKey(w)
    expect(rows).toEqual([
      { _id: ids.p1, _key: 'p1', _source: source, Name: 'Ada' },
      { _id: ids.p2, _key: 'p2', _source: source, Name: 'Grace' },
    ])
    const events = await w.t.deps.db.all<{ data: string }>(
      sql`SELECT data FROM events WHERE type = 'row.entered' AND view_id = ${view} ORDER BY seq`,
    )
    expect(events.map((e) => JSON.parse(e.data))).toEqual(rows.map((row) => ({ rowId: row._id, key: row._key, row })))
    // The OpenAPI document declares it.
    const row = (await (await w.t.app.request('/openapi.json')).json()).components.schemas.Row
    expect(row.required).toEqual(expect.arrayContaining(['_id', '_key', '_source']))
    expect(row.properties._key).toMatchObject({ type: 'string' })
  })
})

describe('rows stored before row identities existed', () => {
  it('get one identity per source and key from the migration, which later writes keep', async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE)
    // The database as the migration found it: records without identities (one source's rows in two
    // generations here, as a sync cut short leaves them).
    await w.t.client.execute({
      sql: `INSERT INTO records (tenant_id, panel_id, data_source_id, generation, key, data, cells, cells_version, created_at, updated_at)
            SELECT tenant_id, panel_id, data_source_id, generation + 1, key, data, cells, cells_version, created_at, updated_at
            FROM records WHERE data_source_id = ?`,
      args: [source],
    })
    await w.t.client.execute('DELETE FROM row_identities')
    await w.t.client.execute('UPDATE records SET row_id = NULL, work = NULL')
    const migration = readFileSync(join(MIGRATIONS_DIR, '0016_worklist.sql'), 'utf8').split('--> statement-breakpoint')
    const backfill = migration.map((q) => q.trim()).filter((q) => /^(INSERT INTO `row_identities`|UPDATE `records`)/.test(q))
    expect(backfill).toHaveLength(2)
    for (const q of backfill) await w.t.client.execute(q)

    const ids = await idsByKey(w)
    expect(Object.keys(ids).sort()).toEqual(['p1', 'p2', 'p3'])
    expect(await identityCount(w, source)).toBe(3)
    const unlinked = await w.t.client.execute('SELECT count(*) AS n FROM records WHERE row_id IS NULL')
    expect(Number(unlinked.rows[0].n)).toBe(0)
    await sync(w, source, [...BEFORE, { id: 'p4', name: 'Mary', age: 60 }])
    expect(await idsByKey(w)).toMatchObject(ids)
    expect(await identityCount(w, source)).toBe(4)
  })
})

describe('other answers naming rows', () => {
  it("the formula preview names each row by its _id, not by its stored record's id", async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE)
    // A re-sync stores new records: their ids are no longer the rows' ids.
    await sync(w, source, BEFORE)
    const ids = await idsByKey(w)
    const records = await recordIds(w)
    expect(Object.values(records)).not.toEqual(expect.arrayContaining(Object.values(ids)))
    const res = await w.alice.post('/api/formulas/preview', { formula: '{Age} + 1', panelId: w.panelId, limit: 10 })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const byId = Object.fromEntries((await panelRows(w)).map((r) => [r._id, r.Age]))
    expect(res.body.values).toHaveLength(3)
    for (const v of res.body.values) expect(v.value).toBe((byId[v._id] as number) + 1)
  })
})

describe('keyless sources', () => {
  it('key rows by their content: an edited record is a new identity, an unchanged one keeps its _id', async () => {
    const w = await world()
    const source = await apiSource(w, BEFORE, null)
    const before = await panelRows(w)
    const byName = (rows: Row[]): Record<string, Row> => Object.fromEntries(rows.map((r) => [r.Name, r]))
    await sync(w, source, [{ id: 'p1', name: 'Ada', age: 41 }, ...BEFORE.slice(1)])
    const after = byName(await panelRows(w))
    expect(after.Grace).toEqual(byName(before).Grace)
    expect(after.Alan).toEqual(byName(before).Alan)
    expect(after.Ada._key).not.toBe(byName(before).Ada._key)
    expect(before.map((r) => r._id)).not.toContain(after.Ada._id)
  })
})

describe('deleting the data source', () => {
  for (const database of ['memory', 'fresh-connection'] as const) {
    const skip = database === 'fresh-connection' && onTarget(['workers', 'deno'], SKIP.freshConnections)
    it.skipIf(skip)(`removes its identities, their work and comments (${database})`, async () => {
      const w = await world({ database })
      const source = await apiSource(w, BEFORE)
      const other = await apiSource(w, [{ id: 'q1', name: 'Kept', age: 1 }])
      const ids = await idsByKey(w)
      await setWorkState(w.t, ids.p1, { status: 'done' })
      await w.t.deps.db.run(sql`INSERT INTO row_comments (tenant_id, panel_id, row_id, author_id, text, created_at, updated_at)
        VALUES ('tenant-a', ${w.panelId}, ${ids.p1}, 'alice', 'called', '2026-01-01', '2026-01-01')`)
      expect(await identityCount(w, source)).toBe(3)
      expect((await w.alice.delete(`/api/datasources/${source}`)).status).toBe(204)
      expect(await identityCount(w, source)).toBe(0)
      expect(await identityCount(w, other)).toBe(1)
      const comments = await w.t.deps.db.all(sql`SELECT id FROM row_comments WHERE row_id = ${ids.p1}`)
      expect(comments).toEqual([])
      expect(Object.keys(await idsByKey(w))).toEqual(['q1'])
      if (database === 'fresh-connection') w.t.client.close()
    })
  }
})
