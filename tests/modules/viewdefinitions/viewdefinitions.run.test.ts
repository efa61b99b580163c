import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { observations, patients, startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { GIVEN_NAMES_VIEW } from '../../helpers/view-definitions.ts'

/**
 * `POST /api/$viewdefinition-run` and its two other URL forms (SQL-ON-FHIR.md, "The operation"):
 * a data source's records as input, the three formats, `header`, `_limit`, `patient`, `_since`,
 * and the errors. The official suite runs in viewdefinitions.conformance.test.ts.
 */

const PATIENTS = 2500
let fhir: Awaited<ReturnType<typeof startFhirServer>>
let t: TestApp
let alice: TestClient
let sourceId: number

const params = (...parameter: Record<string, unknown>[]) => ({ resourceType: 'Parameters', parameter })
const names = { ...GIVEN_NAMES_VIEW, status: 'active' }
const view = { name: 'viewResource', resource: names }

/** A request without the JSON client's parsing, for text answers. */
const raw = async (path: string, body: unknown) => {
  const { authHeaders } = await import('../../helpers/auth.ts')
  return t.app.request(path, { method: 'POST', headers: await authHeaders('tenant-a', 'alice'), body: JSON.stringify(body) })
}

beforeAll(async () => {
  fhir = await startFhirServer({ resources: { Patient: patients(PATIENTS), Observation: observations(20, 5) } })
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  const panel = await alice.post('/api/panels', { name: 'SoF', tenantId: 'tenant-a', userId: 'alice' })
  const source = await alice.post(`/api/panels/${panel.body.id}/datasources`, {
    type: 'fhir',
    config: { baseUrl: fhir.baseUrl, resourceTypes: ['Patient', 'Observation'] },
  })
  expect(source.body).toMatchObject({ syncStatus: 'success' })
  sourceId = source.body.id
}, 60_000)
afterAll(() => fhir.close())

describe('POST /api/$viewdefinition-run', () => {
  it("runs a view over a data source's records, one row per given name of each name", async () => {
    const res = await alice.post('/api/$viewdefinition-run', params(view, { name: 'source', valueString: String(sourceId) }))
    expect(res.status).toBe(200)
    expect(res.body).toHaveLength(PATIENTS * 2)
    expect(res.body).toContainEqual({ id: 'pat-1', family: 'Smith', given: 'Ada' })
    expect(res.body).toContainEqual({ id: 'pat-1', family: 'Smith', given: 'Q.' })
  })

  it('streams ndjson and csv past the buffered head, with or without the header line', async () => {
    const ndjson = await raw(
      '/api/$viewdefinition-run',
      params(view, { name: 'source', valueString: String(sourceId) }, { name: '_format', valueCode: 'ndjson' }),
    )
    expect(ndjson.headers.get('content-type')).toBe('application/x-ndjson')
    const lines = (await ndjson.text()).trimEnd().split('\n')
    expect(lines).toHaveLength(PATIENTS * 2)
    expect(JSON.parse(lines[0])).toEqual({ id: expect.any(String), family: expect.any(String), given: expect.any(String) })

    const body = params(view, { name: 'source', valueString: String(sourceId) }, { name: '_format', valueCode: 'csv' })
    const csv = await (await raw('/api/$viewdefinition-run', body)).text()
    const rows = csv.split('\r\n')
    expect(rows[0]).toBe('id,family,given')
    expect(rows).toHaveLength(PATIENTS * 2 + 2)
    const headless = await (
      await raw('/api/$viewdefinition-run', params(...body.parameter, { name: 'header', valueBoolean: false }))
    ).text()
    expect(headless.split('\r\n')[0]).not.toBe('id,family,given')
    expect(headless.length).toBe(csv.length - 'id,family,given\r\n'.length)
  })

  it('keeps one patient and its resources with patient, and stops at _limit', async () => {
    const obs = {
      resourceType: 'ViewDefinition',
      resource: 'Observation',
      select: [
        {
          column: [
            { name: 'id', path: 'id' },
            { name: 'patient', path: 'subject.getReferenceKey(Patient)' },
          ],
        },
      ],
    }
    const patient = { name: 'patient', valueReference: { reference: 'Patient/pat-2' } }
    const source = { name: 'source', valueString: String(sourceId) }
    const own = await alice.post('/api/$viewdefinition-run', params({ name: 'viewResource', resource: obs }, source, patient))
    expect(own.status).toBe(200)
    expect(own.body.length).toBeGreaterThan(0)
    expect(new Set(own.body.map((r: { patient: string }) => r.patient))).toEqual(new Set(['Patient/pat-2']))
    const one = await alice.post('/api/$viewdefinition-run', params(view, source, patient))
    expect(one.body.map((r: { id: string }) => r.id)).toEqual(['pat-2', 'pat-2'])
    const limited = await alice.post('/api/$viewdefinition-run', params(view, source, { name: '_limit', valueInteger: 3 }))
    expect(limited.body).toHaveLength(3)
  })

  it('keeps records written since _since', async () => {
    const source = { name: 'source', valueString: String(sourceId) }
    const before = await alice.post(
      '/api/$viewdefinition-run',
      params(view, source, { name: '_since', valueInstant: '2026-01-01T11:00:00Z' }),
    )
    expect(before.body).toHaveLength(PATIENTS * 2)
    const after = await alice.post(
      '/api/$viewdefinition-run',
      params(view, source, { name: '_since', valueInstant: '2026-01-01T13:00:00Z' }),
    )
    expect(after.body).toEqual([])
  })

  it('runs inline resources, and no input at all as no rows', async () => {
    const res = await alice.post('/api/$viewdefinition-run', params(view, { name: 'resource', resource: patients(1)[0] }))
    expect(res.body).toEqual([
      { id: 'pat-1', family: 'Smith', given: 'Ada' },
      { id: 'pat-1', family: 'Smith', given: 'Q.' },
    ])
    expect((await alice.post('/api/$viewdefinition-run', params(view))).body).toEqual([])
  })

  it('answers an invalid view with INVALID_VIEW_DEFINITION naming the place', async () => {
    const bad = {
      ...names,
      select: [{ column: [{ name: 'id', path: 'id' }] }, { forEach: 'name', column: [{ name: 'id', path: 'family.' }] }],
    }
    const res = await alice.post('/api/$viewdefinition-run', params({ name: 'viewResource', resource: bad }))
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'INVALID_VIEW_DEFINITION', statusCode: 400, requestId: expect.any(String) })
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(
      expect.arrayContaining(['viewResource.select[1].column[0].path', 'viewResource.select[1].column[0].name']),
    )
  })

  it('refuses parameters that do not fit, naming each', async () => {
    const res = await alice.post(
      '/api/$viewdefinition-run',
      params(
        { name: 'resource', resource: patients(1)[0] },
        { name: 'source', valueString: String(sourceId) },
        { name: '_format', valueCode: 'parquet' },
        { name: 'bogus', valueString: 'x' },
      ),
    )
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual([
      'parameter[2].valueCode',
      'parameter[3].name',
      'parameter',
      'parameter',
    ])
  })
})

describe('POST /api/ViewDefinition/$viewdefinition-run and /api/ViewDefinition/{id}/$viewdefinition-run', () => {
  it('runs a stored view by reference and by its URL', async () => {
    const stored = await alice.post('/api/ViewDefinition', names)
    expect(stored.status).toBe(201)
    const input = { name: 'resource', resource: patients(2)[1] }
    const byReference = await alice.post(
      '/api/ViewDefinition/$viewdefinition-run',
      params({ name: 'viewReference', valueReference: { reference: `ViewDefinition/${stored.body.id}` } }, input),
    )
    expect(byReference.body).toEqual([
      { id: 'pat-2', family: 'Müller', given: 'Grace' },
      { id: 'pat-2', family: 'Müller', given: 'Q.' },
    ])
    const byUrl = await alice.post(`/api/ViewDefinition/${stored.body.id}/$viewdefinition-run`, params(input))
    expect(byUrl.body).toEqual(byReference.body)
    const both = await alice.post(`/api/ViewDefinition/${stored.body.id}/$viewdefinition-run`, params(view, input))
    expect(both.status).toBe(400)
  })
})
