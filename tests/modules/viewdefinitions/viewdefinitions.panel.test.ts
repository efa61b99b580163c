import Papa from 'papaparse'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { panelWithFhirPatients } from '../../helpers/view-definitions.ts'

/**
 * A panel defined by a ViewDefinition over a FHIR source (docs/sql-on-fhir.md, "Panels defined by
 * a ViewDefinition"): one row per given name of each name, keyed `<record>#<position>`, served,
 * filtered, sorted and exported like any rows; syncs keep keys; replace, round trip and delete.
 * Webhook sources: viewdefinitions.panel.webhook.test.ts.
 */

type Resource = Record<string, unknown> & { resourceType: string; id: string }

const patientsV1 = (): Resource[] => [
  {
    resourceType: 'Patient',
    id: 'p1',
    birthDate: '1980-01-02',
    name: [
      { family: 'Smith', given: ['Ada', 'Q.'] },
      { family: 'Jones', given: ['Ada'] },
    ],
  },
  { resourceType: 'Patient', id: 'p2', birthDate: '1990-05-06', name: [{ family: 'Brown', given: ['Grace'] }] },
  { resourceType: 'Patient', id: 'p3', birthDate: '2000-01-01' },
  { resourceType: 'Patient', id: 'p4', name: [{ family: '', given: ['Zed'] }] },
]

const NAMES = {
  resourceType: 'ViewDefinition',
  name: 'patient_given_names',
  resource: 'Patient',
  status: 'active',
  select: [
    {
      column: [
        { name: 'id', path: 'getResourceKey()' },
        { name: 'birth', path: 'birthDate', type: 'date' },
      ],
    },
    {
      forEach: 'name',
      column: [{ name: 'family', path: 'family', type: 'string' }],
      select: [{ forEach: 'given', column: [{ name: 'given', path: '$this', type: 'string' }] }],
    },
  ],
}

let fhir: Awaited<ReturnType<typeof startFhirServer>>
let t: TestApp
let alice: TestClient
let panelId: number
let sourceId: number

beforeAll(async () => {
  fhir = await startFhirServer({ resources: { Patient: patientsV1() } })
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
}, 30_000)
afterAll(() => fhir.close())

async function freshPanel() {
  fhir.state.resources.Patient = patientsV1()
  ;({ panelId, sourceId } = await panelWithFhirPatients(alice, 'Given names', fhir.baseUrl))
}

/** The stored rows readers see: key, record key and the cells by column name. */
async function storedRows() {
  const { rows } = await t.client.execute({
    sql: `SELECT r.id, r.key, r.record_key, r.updated_at FROM records r JOIN data_sources s ON s.id = r.data_source_id
          WHERE r.panel_id = ? AND r.generation = s.current_generation ORDER BY r.key`,
    args: [panelId],
  })
  return rows.map((r) => ({
    id: Number(r.id),
    key: String(r.key),
    recordKey: r.record_key === null ? null : String(r.record_key),
  }))
}

const keys = async () => (await storedRows()).map((r) => r.key)

async function panelRows(query = '') {
  const res = await alice.get(`/api/panels/${panelId}/rows?limit=100${query}`)
  expect(res.status).toBe(200)
  return res.body.data as Record<string, unknown>[]
}

const changeCount = async () =>
  Number((await t.client.execute({ sql: 'SELECT count(*) AS n FROM changes WHERE panel_id = ?', args: [panelId] })).rows[0].n)

const putView = (view: unknown, extra: Record<string, unknown> = {}) =>
  alice.put(`/api/panels/${panelId}/viewdefinition`, { viewResource: view, ...extra })

describe('PUT /api/panels/{id}/viewdefinition', () => {
  beforeAll(freshPanel)

  it("makes the view's columns the base columns and its rows the panel's rows, several per record", async () => {
    const res = await putView(NAMES)
    expect(res.status).toBe(200)
    expect(res.body).toEqual(NAMES)
    const columns = await alice.get(`/api/panels/${panelId}/columns`)
    expect(columns.body.baseColumns.map((c: Record<string, unknown>) => [c.name, c.type, c.fhirPath])).toEqual([
      ['id', 'text', 'getResourceKey()'],
      ['birth', 'date', 'birthDate'],
      ['family', 'text', 'family'],
      ['given', 'text', '$this'],
    ])
    const rows = await panelRows('&sort=given')
    expect(rows.map((r) => [r.id, r.birth, r.family, r.given])).toEqual([
      ['Patient/p1', '1980-01-02', 'Smith', 'Ada'],
      ['Patient/p1', '1980-01-02', 'Jones', 'Ada'],
      ['Patient/p2', '1990-05-06', 'Brown', 'Grace'],
      ['Patient/p1', '1980-01-02', 'Smith', 'Q.'],
      ['Patient/p4', null, '', 'Zed'],
    ])
    // A family of "" stays "", not null; p3 (no name) gives no row.
    expect(await storedRows()).toEqual(
      [
        'Patient/p1#name[0].given[0]',
        'Patient/p1#name[0].given[1]',
        'Patient/p1#name[1].given[0]',
        'Patient/p2#name[0].given[0]',
        'Patient/p4#name[0].given[0]',
      ].map((key) => ({ id: expect.any(Number), key, recordKey: key.split('#')[0] })),
    )
  })

  it('serves a view with a filter and a sort over the rows, and exports it as csv and json', async () => {
    const view = await alice.post('/api/views', {
      name: 'Ada and Grace',
      panelId,
      config: { columns: ['id', 'family', 'given'], groupBy: [], layout: 'table' },
      filters: [{ columnTitle: 'given', operator: 'in', value: ['Ada', 'Grace'] }],
      sorting: [
        { columnTitle: 'family', direction: 'desc', priority: 1 },
        { columnTitle: 'id', direction: 'asc', priority: 2 },
      ],
    })
    expect(view.status).toBe(201)
    const rows = await alice.get(`/api/views/${view.body.id}/rows`)
    expect(rows.body.data.map((r: Record<string, unknown>) => [r.id, r.family, r.given])).toEqual([
      ['Patient/p1', 'Smith', 'Ada'],
      ['Patient/p1', 'Jones', 'Ada'],
      ['Patient/p2', 'Brown', 'Grace'],
    ])
    const headers = await authHeaders('tenant-a', 'alice')
    const csv = await t.app.request(`/api/views/${view.body.id}/export?format=csv`, { headers })
    const parsed = Papa.parse<Record<string, string>>((await csv.text()).trimEnd(), { header: true, newline: '\r\n' })
    expect(parsed.data).toEqual([
      { id: 'Patient/p1', family: 'Smith', given: 'Ada' },
      { id: 'Patient/p1', family: 'Jones', given: 'Ada' },
      { id: 'Patient/p2', family: 'Brown', given: 'Grace' },
    ])
    const json = await t.app.request(`/api/views/${view.body.id}/export?format=json`, { headers })
    expect(await json.json()).toEqual([
      { id: 'Patient/p1', family: 'Smith', given: 'Ada' },
      { id: 'Patient/p1', family: 'Jones', given: 'Ada' },
      { id: 'Patient/p2', family: 'Brown', given: 'Grace' },
    ])
  })

  it("computes calculated columns over the view's columns", async () => {
    const res = await alice.post(`/api/panels/${panelId}/columns/calculated`, {
      name: 'Full',
      formula: 'CONCAT({given}, " ", {family})',
    })
    expect(res.status).toBe(201)
    const rows = await panelRows('&sort=Full')
    expect(rows.map((r) => r.Full)).toEqual(['Ada Jones', 'Ada Smith', 'Grace Brown', 'Q. Smith', 'Zed '])
  })

  it('keeps row keys and ids across syncs; an element that moved is another row, a removed name loses its rows', async () => {
    const before = await storedRows()
    expect((await alice.post(`/api/datasources/${sourceId}/sync`)).status).toBe(200)
    // A full sync writes a new generation: the same keys, the cells unchanged.
    expect(await keys()).toEqual(before.map((r) => r.key))
    expect((await panelRows('&sort=Full')).map((r) => r.Full)).toEqual([
      'Ada Jones',
      'Ada Smith',
      'Grace Brown',
      'Q. Smith',
      'Zed ',
    ])
    // p1 drops its first name: Jones moves from name[1] to name[0], so its row has another key.
    fhir.state.resources.Patient[0].name = [{ family: 'Jones', given: ['Ada'] }]
    expect((await alice.post(`/api/datasources/${sourceId}/sync`)).status).toBe(200)
    expect(await keys()).toEqual(['Patient/p1#name[0].given[0]', 'Patient/p2#name[0].given[0]', 'Patient/p4#name[0].given[0]'])
    expect((await panelRows('&sort=Full')).map((r) => r.Full)).toEqual(['Ada Jones', 'Grace Brown', 'Zed '])
  })

  it('refuses to change a column the view defines through the columns routes (409)', async () => {
    const columns = await alice.get(`/api/panels/${panelId}/columns`)
    const family = columns.body.baseColumns.find((c: Record<string, unknown>) => c.name === 'family')
    const res = await alice.put(`/api/columns/${family.id}`, { fhirPath: 'name.family' })
    expect(res.status).toBe(409)
    expect(res.body.message).toContain('viewdefinition')
    expect((await alice.delete(`/api/columns/${family.id}`)).status).toBe(409)
  })

  it('answers 400 naming the place of an invalid view, and changes nothing', async () => {
    const changes = await changeCount()
    const bad = { ...NAMES, select: [{ column: [{ name: 'id', path: 'name.where(' }] }] }
    const res = await putView(bad)
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'INVALID_VIEW_DEFINITION', statusCode: 400 })
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['viewResource.select[0].column[0].path'])
    const neither = await alice.put(`/api/panels/${panelId}/viewdefinition`, {})
    expect(neither.status).toBe(400)
    expect(await changeCount()).toBe(changes)
  })
})

describe('replacing the view, the round trip, and removing the view', () => {
  beforeAll(async () => {
    await freshPanel()
    expect((await putView(NAMES)).status).toBe(200)
  })

  it('answers the view it was given; putting that answer back changes nothing', async () => {
    const got = await alice.get(`/api/panels/${panelId}/viewdefinition`)
    expect(got.status).toBe(200)
    expect(got.body).toEqual(NAMES)
    const [changes, rows] = [await changeCount(), await storedRows()]
    t.clock.advance(60_000)
    const again = await putView(got.body)
    expect(again.status).toBe(200)
    expect(await changeCount()).toBe(changes)
    const after = await t.client.execute({ sql: 'SELECT max(updated_at) AS at FROM records WHERE panel_id = ?', args: [panelId] })
    expect(String(after.rows[0].at) < t.clock.now().toISOString()).toBe(true)
    expect(await storedRows()).toEqual(rows)
  })

  it('replaces the view in one change record, re-expanding the stored resources without a sync', async () => {
    const changes = await changeCount()
    const runs = await alice.get(`/api/datasources/${sourceId}/sync-runs`)
    const byName = {
      resourceType: 'ViewDefinition',
      resource: 'Patient',
      select: [
        { column: [{ name: 'id', path: 'getResourceKey()' }] },
        {
          forEach: 'name',
          column: [
            { name: 'family', path: 'family' },
            { name: 'given', path: 'given', collection: true },
          ],
        },
      ],
    }
    const res = await putView(byName)
    expect(res.status).toBe(200)
    expect(await changeCount()).toBe(changes + 1)
    const [change] = (
      await t.client.execute({ sql: 'SELECT * FROM changes WHERE panel_id = ? ORDER BY id DESC LIMIT 1', args: [panelId] })
    ).rows
    expect(change).toMatchObject({ entity_type: 'Panel', action: 'UPDATE' })
    expect(JSON.parse(String(change.changes)).baseColumns).toEqual({
      oldValue: ['id', 'birth', 'family', 'given'],
      newValue: ['id', 'family', 'given'],
    })
    expect((await alice.get(`/api/datasources/${sourceId}/sync-runs`)).body).toEqual(runs.body)
    expect(await keys()).toEqual(['Patient/p1#name[0]', 'Patient/p1#name[1]', 'Patient/p2#name[0]', 'Patient/p4#name[0]'])
    const rows = await panelRows('&sort=family')
    // A collection column holds arrays, one element too; "" stays "".
    expect(rows.map((r) => [r.family, r.given])).toEqual([
      ['Brown', ['Grace']],
      ['Jones', ['Ada']],
      ['Smith', ['Ada', 'Q.']],
      ['', ['Zed']],
    ])
    expect(rows[0]).not.toHaveProperty('birth')
  })

  it('returns to one row per record on DELETE, the view columns kept as ordinary base columns', async () => {
    const res = await alice.delete(`/api/panels/${panelId}/viewdefinition`)
    expect(res.status).toBe(204)
    // p3, which the view gave no row, comes back too: it was held, not dropped.
    expect(await storedRows()).toEqual(
      ['Patient/p1', 'Patient/p2', 'Patient/p3', 'Patient/p4'].map((key) => ({ id: expect.any(Number), key, recordKey: null })),
    )
    const columns = await alice.get(`/api/panels/${panelId}/columns`)
    expect(columns.body.baseColumns.map((c: Record<string, unknown>) => [c.name, c.fhirPath])).toEqual([
      ['id', 'getResourceKey()'],
      ['family', 'name.family'],
      ['given', 'name.given'],
    ])
    const rows = await panelRows('&sort=id')
    expect(rows.map((r) => [r.id, r.family, r.given])).toEqual([
      ['Patient/p1', ['Smith', 'Jones'], ['Ada', 'Q.', 'Ada']],
      ['Patient/p2', 'Brown', ['Grace']],
      ['Patient/p3', null, []],
      ['Patient/p4', '', ['Zed']],
    ])
    expect((await alice.post(`/api/datasources/${sourceId}/sync`)).status).toBe(200)
    expect(await keys()).toEqual(['Patient/p1', 'Patient/p2', 'Patient/p3', 'Patient/p4'])
    // The panel is no longer defined by a view: GET answers its base columns as a flat view.
    const flat = await alice.get(`/api/panels/${panelId}/viewdefinition`)
    expect(flat.body.select).toEqual([
      {
        column: [
          { name: 'id', path: 'getResourceKey()', type: 'string' },
          { name: 'family', path: 'name.family', type: 'string' },
          { name: 'given', path: 'name.given', type: 'string', collection: true },
        ],
      },
    ])
    expect(flat.body.resource).toBe('Patient')
  })
})

describe('ownership and flat views', () => {
  it("answers 404 for another tenant's or another user's panel, on every route", async () => {
    await freshPanel()
    const bob = clientFor(t.app, 'tenant-b', 'bob')
    const carol = clientFor(t.app, 'tenant-a', 'carol')
    for (const other of [bob, carol]) {
      const path = `/api/panels/${panelId}/viewdefinition`
      for (const res of [await other.get(path), await other.put(path, { viewResource: NAMES }), await other.delete(path)]) {
        expect(res.status).toBe(404)
        expect(res.body).toMatchObject({ code: 'NOT_FOUND', statusCode: 404 })
      }
    }
    expect((await alice.get(`/api/panels/${panelId}/viewdefinition`)).body.select).toEqual([{ column: [] }])
  })

  it("gives a non-FHIR panel's base columns as a flat ViewDefinition", async () => {
    const panel = await alice.post('/api/panels', { name: 'Ward list (CSV)', tenantId: 'tenant-a', userId: 'alice' })
    const id = panel.body.id
    await alice.post(`/api/panels/${id}/columns/base`, { name: 'Full Name', sourceField: 'Full Name' })
    await alice.post(`/api/panels/${id}/columns/base`, { name: 'Age', sourceField: 'age', type: 'number' })
    await alice.post(`/api/panels/${id}/columns/base`, { name: 'Admitted', fhirPath: 'admitted', type: 'date' })
    await alice.post(`/api/panels/${id}/columns/calculated`, { name: 'Months', formula: '{Age} * 12', type: 'number' })
    const res = await alice.get(`/api/panels/${id}/viewdefinition`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      resourceType: 'ViewDefinition',
      name: 'Ward_list_CSV',
      status: 'active',
      resource: 'Basic',
      select: [
        {
          column: [
            { name: 'Full_Name', path: '`Full Name`', type: 'string', tag: [{ name: 'panel-column', value: 'Full Name' }] },
            { name: 'Age', path: 'age', type: 'decimal' },
            { name: 'Admitted', path: 'admitted', type: 'date' },
          ],
        },
      ],
    })
  })
})
