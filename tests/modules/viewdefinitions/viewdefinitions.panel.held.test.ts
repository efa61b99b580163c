import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { deliverSigned, panelWithFhirPatients } from '../../helpers/view-definitions.ts'

/**
 * A resource a panel's ViewDefinition gives no row (docs/sql-on-fhir.md, "Decision: a resource the
 * view gives no row is held"): removing the view, or replacing it with one that gives the resource
 * rows, brings it back as rows without reading the source again, through full syncs and up to the
 * source's removal.
 */

type Resource = Record<string, unknown> & { resourceType: string; id: string }

const patients = (): Resource[] => [
  { resourceType: 'Patient', id: 'p1', gender: 'female', name: [{ family: 'Smith' }, { family: 'Jones' }] },
  { resourceType: 'Patient', id: 'p2', gender: 'male', name: [{ family: 'Brown' }] },
  { resourceType: 'Patient', id: 'p3', gender: 'female' },
]

const NAMES = {
  resourceType: 'ViewDefinition',
  resource: 'Patient',
  status: 'active',
  select: [
    { column: [{ name: 'id', path: 'getResourceKey()' }] },
    { forEach: 'name', column: [{ name: 'family', path: 'family', type: 'string' }] },
  ],
}

let fhir: Awaited<ReturnType<typeof startFhirServer>>
let t: TestApp
let alice: TestClient
let panelId: number
let sourceId: number

beforeAll(async () => {
  fhir = await startFhirServer({ resources: { Patient: patients() } })
}, 30_000)
afterAll(() => fhir.close())

beforeEach(async () => {
  fhir.state.resources.Patient = patients()
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  ;({ panelId, sourceId } = await panelWithFhirPatients(alice, 'Names', fhir.baseUrl))
})

/** The visible rows' keys and record keys. */
async function storedRows() {
  const { rows } = await t.client.execute({
    sql: `SELECT r.key, r.record_key FROM records r JOIN data_sources s ON s.id = r.data_source_id
          WHERE r.panel_id = ? AND r.generation = s.current_generation ORDER BY r.key`,
    args: [panelId],
  })
  return rows.map((r) => [String(r.key), r.record_key === null ? null : String(r.record_key)])
}

/** Every held record of the panel: key, generation and its data's gender. */
async function held() {
  const { rows } = await t.client.execute({
    sql: `SELECT key, generation, data ->> '$.gender' AS gender FROM held_records WHERE panel_id = ? ORDER BY key, generation`,
    args: [panelId],
  })
  return rows.map((r) => [String(r.key), Number(r.generation), r.gender])
}

const generation = async () =>
  Number(
    (await t.client.execute({ sql: 'SELECT current_generation AS g FROM data_sources WHERE id = ?', args: [sourceId] })).rows[0]
      .g,
  )

async function panelRows() {
  const res = await alice.get(`/api/panels/${panelId}/rows?limit=100&sort=id`)
  expect(res.status).toBe(200)
  return (res.body.data as Record<string, unknown>[]).map((r) => [r.id, r.family])
}

const putView = async (view: unknown) => {
  const res = await alice.put(`/api/panels/${panelId}/viewdefinition`, { viewResource: view })
  expect(res.status).toBe(200)
}
const deleteView = async () => expect((await alice.delete(`/api/panels/${panelId}/viewdefinition`)).status).toBe(204)
const sync = async () => expect((await alice.post(`/api/datasources/${sourceId}/sync`)).status).toBe(200)

describe('a resource its view gives no row', () => {
  it('is held while the view is on and comes back, with its cells, when the view is removed', async () => {
    await putView(NAMES)
    expect(await storedRows()).toEqual([
      ['Patient/p1#name[0]', 'Patient/p1'],
      ['Patient/p1#name[1]', 'Patient/p1'],
      ['Patient/p2#name[0]', 'Patient/p2'],
    ])
    expect(await held()).toEqual([['Patient/p3', await generation(), 'female']])
    // No row reader sees it.
    expect(await panelRows()).toEqual([
      ['Patient/p1', 'Smith'],
      ['Patient/p1', 'Jones'],
      ['Patient/p2', 'Brown'],
    ])

    await deleteView()
    expect(await storedRows()).toEqual([
      ['Patient/p1', null],
      ['Patient/p2', null],
      ['Patient/p3', null],
    ])
    expect(await held()).toEqual([])
    expect(await panelRows()).toEqual([
      ['Patient/p1', ['Smith', 'Jones']],
      ['Patient/p2', 'Brown'],
      ['Patient/p3', null],
    ])

    // Put again: it goes, held again; a wider view (no forEach) gives it its row back.
    await putView(NAMES)
    expect((await storedRows()).map((r) => r[0])).not.toContain('Patient/p3')
    expect(await held()).toEqual([['Patient/p3', await generation(), 'female']])
    await putView({ ...NAMES, select: [{ column: [{ name: 'id', path: 'getResourceKey()' }] }] })
    expect(await storedRows()).toEqual([
      ['Patient/p1', 'Patient/p1'],
      ['Patient/p2', 'Patient/p2'],
      ['Patient/p3', 'Patient/p3'],
    ])
    expect(await held()).toEqual([])
  })

  it('stays restorable through full syncs, which hold the resources of their own generation only', async () => {
    await putView(NAMES)
    // p3 changes at the source; p2 loses its name (its rows go, it is held); p1 keeps its rows.
    fhir.state.resources.Patient = patients().map((p) =>
      p.id === 'p3' ? { ...p, gender: 'other' } : p.id === 'p2' ? { resourceType: 'Patient', id: 'p2', gender: 'male' } : p,
    )
    await sync()
    const g = await generation()
    expect(await held()).toEqual([
      ['Patient/p2', g, 'male'],
      ['Patient/p3', g, 'other'],
    ])
    expect((await storedRows()).map((r) => r[0])).toEqual(['Patient/p1#name[0]', 'Patient/p1#name[1]'])
    // p3 gets a name: its rows are stored, it is no longer held.
    fhir.state.resources.Patient = fhir.state.resources.Patient.map((p) =>
      p.id === 'p3' ? { ...p, name: [{ family: 'Green' }] } : p,
    )
    await sync()
    expect(await held()).toEqual([['Patient/p2', await generation(), 'male']])
    expect((await storedRows()).map((r) => r[0])).toContain('Patient/p3#name[0]')

    await deleteView()
    expect(await panelRows()).toEqual([
      ['Patient/p1', ['Smith', 'Jones']],
      ['Patient/p2', null],
      ['Patient/p3', 'Green'],
    ])
    expect(await held()).toEqual([])
  })

  it('is read by $viewdefinition-run over its source, once, keeping its time through full syncs', async () => {
    await putView(NAMES)
    t.clock.set('2026-01-01T13:00:00.000Z')
    fhir.state.resources.Patient = patients().map((p) => (p.id === 'p2' ? { ...p, gender: 'other' } : p))
    await sync()
    const ids = async (...extra: Record<string, unknown>[]) => {
      const res = await alice.post('/api/$viewdefinition-run', {
        resourceType: 'Parameters',
        parameter: [
          { name: 'source', valueString: String(sourceId) },
          { name: 'viewResource', resource: { ...NAMES, select: [{ column: [{ name: 'id', path: 'id' }] }] } },
          ...extra,
        ],
      })
      expect(res.status).toBe(200)
      return (res.body as { id: string }[]).map((r) => r.id)
    }
    expect(await ids()).toEqual(['p1', 'p2', 'p3'])
    expect(await ids({ name: '_since', valueInstant: '2026-01-01T12:30:00Z' })).toEqual(['p2'])
    fhir.state.resources.Patient = patients().map((p) => (p.id === 'p3' ? { ...p, gender: 'unknown' } : p))
    await sync()
    expect(await ids({ name: '_since', valueInstant: '2026-01-01T12:30:00Z' })).toEqual(['p2', 'p3'])
  })

  it('yields to a row a writer stored for it meanwhile, when the view goes', async () => {
    await putView(NAMES)
    // A writer that did not know the view yet (a sync that loaded the panel before it) stored p3's newer data as its row.
    await t.client.execute({
      sql: `INSERT INTO records (tenant_id, panel_id, data_source_id, generation, key, data, cells, cells_version, created_at, updated_at)
            VALUES ('tenant-a', ?, ?, ?, 'Patient/p3', ?, '{}', 0, '2026-01-01T12:00:00.000Z', '2026-01-01T12:00:00.000Z')`,
      args: [panelId, sourceId, await generation(), JSON.stringify({ resourceType: 'Patient', id: 'p3', gender: 'other' })],
    })
    await deleteView()
    const { rows } = await t.client.execute({
      sql: `SELECT data ->> '$.gender' AS gender FROM records WHERE panel_id = ? AND key = 'Patient/p3'`,
      args: [panelId],
    })
    expect(rows.map((r) => r.gender)).toEqual(['other'])
    expect(await held()).toEqual([])
  })

  it('is not held in the partial generation of a full sync that fails', async () => {
    await putView(NAMES)
    const before = await held()
    // Twelve more nameless Patients: the first page (ten) is written, the next link leads nowhere.
    for (let i = 4; i <= 15; i++) fhir.state.resources.Patient.push({ resourceType: 'Patient', id: `p${i}` })
    fhir.state.nextOrigin = 'http://127.0.0.1:9'
    try {
      await alice.post(`/api/datasources/${sourceId}/sync`)
    } finally {
      fhir.state.nextOrigin = undefined
    }
    const status = await t.client.execute({ sql: 'SELECT sync_status AS s FROM data_sources WHERE id = ?', args: [sourceId] })
    expect(status.rows[0].s).toBe('error')
    expect(await held()).toEqual(before)
  })

  it('leaves nothing held behind when its source is deleted', async () => {
    await putView(NAMES)
    expect(await held()).toHaveLength(1)
    expect((await alice.delete(`/api/datasources/${sourceId}`)).status).toBe(204)
    const { rows } = await t.client.execute('SELECT count(*) AS n FROM held_records')
    expect(Number(rows[0].n)).toBe(0)
  })
})

describe('a delivered resource its view gives no row', () => {
  const SECRET = 'whsec-held-0123456789'
  const deliver = async (body: unknown) => expect((await deliverSigned(t.app, 'held-fhir', SECRET, body)).status).toBe(200)

  it('is held, released when an update gives it rows, held again when they go, and gone with its delete', async () => {
    panelId = (await alice.post('/api/panels', { name: 'Pushed', tenantId: 'tenant-a', userId: 'alice' })).body.id
    const source = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'webhook',
      config: { endpoint: 'held-fhir', secret: SECRET, events: ['data.created', 'data.updated', 'data.deleted'] },
    })
    expect(source.status).toBe(201)
    sourceId = source.body.id
    await putView(NAMES)
    const nameless = { resourceType: 'Patient', id: 'w1', gender: 'female' }
    await deliver({ id: 'e1', event: 'data.created', data: [nameless, { ...nameless, id: 'w2' }] })
    expect((await held()).map((h) => h[0])).toEqual(['w1', 'w2'])
    expect(await storedRows()).toEqual([])

    await deliver({ id: 'e2', event: 'data.updated', data: { ...nameless, name: [{ family: 'Lee' }] } })
    expect((await held()).map((h) => h[0])).toEqual(['w2'])
    expect(await storedRows()).toEqual([['w1#name[0]', 'w1']])

    await deliver({ id: 'e3', event: 'data.updated', data: nameless })
    expect((await held()).map((h) => h[0])).toEqual(['w1', 'w2'])
    expect(await storedRows()).toEqual([])

    await deliver({ id: 'e4', event: 'data.deleted', data: { ...nameless, id: 'w2' } })
    expect((await held()).map((h) => h[0])).toEqual(['w1'])

    // The view removed: w1, which no sync could read again, is a row once more.
    await deleteView()
    expect(await storedRows()).toEqual([['w1', null]])
    expect(await held()).toEqual([])
  })
})
