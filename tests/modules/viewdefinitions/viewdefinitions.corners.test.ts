import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { panelWithFhirPatients } from '../../helpers/view-definitions.ts'

/**
 * Corners of the SQL-on-FHIR routes found through HTTP (issue 20 item 6): `_since` keeps only
 * records changed since then, a bad `_format` is named, and an ordinary panel's view runs over its
 * own source.
 */

type Resource = Record<string, unknown> & { resourceType: string; id: string }

const patients = (): Resource[] => [
  { resourceType: 'Patient', id: 'p1', gender: 'female', name: [{ family: 'Smith', given: ['Ada'] }] },
  { resourceType: 'Patient', id: 'p2', gender: 'male', name: [{ family: 'Brown', given: ['Alan'] }] },
  { resourceType: 'Patient', id: 'p3', gender: 'female' },
]

let fhir: Awaited<ReturnType<typeof startFhirServer>>
/** The same Patients as a plain JSON API (an ordinary, non-FHIR source of FHIR resources). */
let api: FixtureServer
let t: TestApp
let alice: TestClient
let panelId: number
let sourceId: number

const params = (...parameter: Record<string, unknown>[]) => ({ resourceType: 'Parameters', parameter })
const IDS = {
  resourceType: 'ViewDefinition',
  resource: 'Patient',
  status: 'active',
  select: [{ column: [{ name: 'id', path: 'id' }] }],
}
const run = (...parameter: Record<string, unknown>[]) =>
  alice.post('/api/$viewdefinition-run', params({ name: 'source', valueString: String(sourceId) }, ...parameter))

beforeAll(async () => {
  fhir = await startFhirServer({ resources: { Patient: patients() } })
  api = await startJsonServer((_req, res) => sendJson(res, 200, patients()))
}, 30_000)
afterAll(async () => {
  await fhir.close()
  await api.close()
})

beforeEach(async () => {
  fhir.state.resources.Patient = patients()
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  ;({ panelId, sourceId } = await panelWithFhirPatients(alice, 'Patients', fhir.baseUrl))
})

describe('$viewdefinition-run _since', () => {
  it('keeps only the records changed or added since the instant, through full syncs and recomputes', async () => {
    // Synced at 12:00. At 13:00 p2 changes and p4 arrives; a full sync rewrites every record.
    t.clock.set('2026-01-01T13:00:00.000Z')
    fhir.state.resources.Patient = patients().map((p) => (p.id === 'p2' ? { ...p, gender: 'other' } : p))
    fhir.state.resources.Patient.push({ resourceType: 'Patient', id: 'p4', gender: 'unknown' })
    expect((await alice.post(`/api/datasources/${sourceId}/sync`)).status).toBe(200)
    // At 14:00 a column is added (every row recomputed) and an unchanged full sync runs again.
    t.clock.set('2026-01-01T14:00:00.000Z')
    const column = await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Gender', fhirPath: 'gender' })
    expect(column.status).toBe(201)
    expect((await alice.post(`/api/datasources/${sourceId}/sync`)).status).toBe(200)
    const view = { name: 'viewResource', resource: IDS }
    const since = async (instant: string) =>
      ((await run(view, { name: '_since', valueInstant: instant })).body as { id: string }[]).map((r) => r.id).sort()
    expect(await since('2026-01-01T11:00:00Z')).toEqual(['p1', 'p2', 'p3', 'p4'])
    expect(await since('2026-01-01T12:30:00Z')).toEqual(['p2', 'p4'])
    expect(await since('2026-01-01T13:30:00Z')).toEqual([])
  })
})

describe('$viewdefinition-run _format', () => {
  it('names _format when its value is not a format', async () => {
    const res = await run({ name: 'viewResource', resource: IDS }, { name: '_format', valueCode: 'xml' })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details).toEqual([{ path: 'parameter[2].valueCode', message: expect.stringContaining('_format') }])
    expect(res.body.message).toContain('_format')
  })
})

describe('GET /api/panels/{id}/viewdefinition on an ordinary panel', () => {
  /** The panel's rows as its flat view names them, and the view run over `source`. */
  async function viewAndRows(panel: number, source: number) {
    await alice.post(`/api/panels/${panel}/columns/base`, { name: 'Family', fhirPath: 'Patient.name.family.first()' })
    await alice.post(`/api/panels/${panel}/columns/base`, { name: 'Gender', sourceField: 'gender' })
    await alice.post(`/api/panels/${panel}/columns/base`, { name: 'Record Id', fhirPath: 'id' })
    const rows = await alice.get(`/api/panels/${panel}/rows?limit=100`)
    const expected = (rows.body.data as Record<string, unknown>[]).map((r) => ({
      Family: r.Family,
      Gender: r.Gender,
      Record_Id: r['Record Id'],
    }))
    expect(expected).toHaveLength(3)
    const view = await alice.get(`/api/panels/${panel}/viewdefinition`)
    expect(view.status).toBe(200)
    const res = await alice.post(
      '/api/$viewdefinition-run',
      params({ name: 'viewResource', resource: view.body }, { name: 'source', valueString: String(source) }),
    )
    expect(res.status).toBe(200)
    return { view: view.body, expected, answered: res.body }
  }

  it("gives the panel's rows when run over the panel's own FHIR source", async () => {
    const { view, expected, answered } = await viewAndRows(panelId, sourceId)
    expect(view.resource).toBe('Patient')
    expect(answered).toEqual(expected)
  })

  it('takes the resource type from the records when no FHIR source names it', async () => {
    const panel = await alice.post('/api/panels', { name: 'From an API', tenantId: 'tenant-a', userId: 'alice' })
    const source = await alice.post(`/api/panels/${panel.body.id}/datasources`, {
      type: 'api',
      config: { apiEndpoint: api.url, keyField: 'id' },
    })
    expect(source.body).toMatchObject({ syncStatus: 'success' })
    const { view, expected, answered } = await viewAndRows(panel.body.id, source.body.id)
    expect(view.resource).toBe('Patient')
    expect(answered).toEqual(expected)
  })
})
