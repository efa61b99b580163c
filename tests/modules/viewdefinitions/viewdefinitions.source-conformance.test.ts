import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { loadSuites, runSuiteTest, SUITE_TEST_COUNT } from '../../helpers/sof-suite.ts'

/**
 * The 134 official SQL-on-FHIR v2 tests again, each over a FHIR data source holding its suite's
 * resources (synced from a loopback FHIR server) instead of inline resources. A run over stored
 * records reads only the elements the view reads, built by SQLite, with the id as a column
 * (docs/sql-on-fhir.md, "Why peak memory used to grow with the run"): every answer must still be the
 * suite's, whatever the view reads (choice types, primitive extensions, `%resource`, `$this`,
 * `repeat`, `where`, constants, decimals).
 */

const suites = loadSuites()
const sourceOf = new Map<string, number>()

let t: TestApp
let client: TestClient
let fhir: Awaited<ReturnType<typeof startFhirServer>>
/** The fixture server types its resources as FHIR's; the suite's (and ours below) are served as they are. */
type Served = typeof fhir.state.resources

beforeAll(async () => {
  fhir = await startFhirServer({ resources: {} })
  t = await makeTestApp()
  client = clientFor(t.app, 'tenant-sof', 'user-sof')
  const panel = await client.post('/api/panels', { name: 'Official suite', tenantId: 'tenant-sof', userId: 'user-sof' })
  expect(panel.status).toBe(201)
  for (const suite of suites) sourceOf.set(suite.file, await storedAsSource(panel.body.id, suite.resources, suite.file))
}, 60_000)
afterAll(() => fhir.close())

/** A FHIR data source of the panel holding `resources`, synced from the loopback server; its id. */
async function storedAsSource(panelId: number, resources: Record<string, unknown>[], name?: string): Promise<number> {
  const types = [...new Set(resources.map((r) => String(r.resourceType)))]
  fhir.state.resources = Object.fromEntries(
    types.map((type) => [type, resources.filter((r) => r.resourceType === type)]),
  ) as Served
  const source = await client.post(`/api/panels/${panelId}/datasources`, {
    type: 'fhir',
    ...(name ? { name } : {}),
    config: { baseUrl: fhir.baseUrl, resourceTypes: types },
  })
  expect(source.body, name).toMatchObject({ syncStatus: 'success' })
  return source.body.id
}

describe("SQL-on-FHIR v2 official tests over a data source's records", () => {
  it('has every suite stored, each of its resources a record', async () => {
    expect(suites.reduce((n, s) => n + s.tests.length, 0)).toBe(SUITE_TEST_COUNT)
    for (const suite of suites) {
      const { rows } = await t.client.execute({
        sql: `SELECT count(*) AS n FROM records r JOIN data_sources s ON s.id = r.data_source_id
              WHERE s.id = ? AND r.generation = s.current_generation`,
        args: [sourceOf.get(suite.file)!],
      })
      expect(Number(rows[0].n), suite.file).toBe(suite.resources.length)
    }
  })

  for (const suite of suites) {
    describe(suite.file, () => {
      for (const test of suite.tests) {
        it(test.title, async () => {
          const outcome = await runSuiteTest(client, suite, test, sourceOf.get(suite.file))
          expect(outcome.error ?? 'passed').toBe('passed')
        })
      }
    })
  }
})

describe('a run over stored records answers as the same run over the resources inline', () => {
  const resources = [
    {
      resourceType: 'Patient',
      id: 'p1',
      birthDate: '1980',
      _birthDate: { extension: [{ url: 'http://example.org/precision', valueCode: 'year' }] },
      name: [{ family: 'Zoë', given: ['A\u2028b', '"quoted"'] }],
    },
    { resourceType: 'Patient', id: 7, name: [{ family: 'Numeric id' }] },
    { resourceType: 'Patient', id: 'a-longer-id-than-ten', active: false, name: [] },
    {
      resourceType: 'Observation',
      id: 'o1',
      status: 'final',
      subject: { reference: 'Patient/p1' },
      valueQuantity: { value: 1.1, unit: 'mg' },
    },
    { resourceType: 'Observation', id: 'o2', status: 'final', subject: { reference: 'Patient/7' }, valueString: '' },
    { resourceType: 'Observation', id: 'o3', status: 'preliminary', valueBoolean: false },
  ]
  const views: Record<string, unknown> = {
    'primitive extensions and a numeric id': {
      resource: 'Patient',
      select: [
        {
          column: [
            { name: 'id', path: 'id' },
            { name: 'born', path: 'birthDate' },
            { name: 'precision', path: "birthDate.extension('http://example.org/precision').value.ofType(code)" },
            { name: 'active', path: 'active' },
          ],
        },
        {
          forEachOrNull: 'name',
          column: [
            { name: 'family', path: 'family' },
            { name: 'given', path: 'given', collection: true },
          ],
        },
      ],
    },
    'choice types, references and a where': {
      resource: 'Observation',
      where: [{ path: "status = 'final'" }],
      select: [
        {
          column: [
            { name: 'id', path: 'getResourceKey()' },
            { name: 'patient', path: 'subject.getReferenceKey(Patient)' },
            { name: 'quantity', path: 'value.ofType(Quantity).value' },
            { name: 'text', path: 'value.ofType(string)' },
          ],
        },
      ],
    },
    'the whole resource through %resource': {
      resource: 'Observation',
      select: [
        {
          forEachOrNull: 'valueQuantity',
          column: [
            { name: 'status', path: '%resource.status' },
            { name: 'id', path: '%resource.id' },
          ],
        },
      ],
    },
  }

  let sourceId: number
  beforeAll(async () => {
    const panel = await client.post('/api/panels', { name: 'Edge cases', tenantId: 'tenant-sof', userId: 'user-sof' })
    sourceId = await storedAsSource(panel.body.id, resources)
  })

  const run = async (view: unknown, input: Record<string, unknown>[]) => {
    const res = await client.post('/api/$viewdefinition-run', {
      resourceType: 'Parameters',
      parameter: [
        { name: 'viewResource', resource: { resourceType: 'ViewDefinition', status: 'active', ...(view as object) } },
        ...input,
      ],
    })
    expect(res.status).toBe(200)
    return (res.body as Record<string, unknown>[]).map((row) => JSON.stringify(row)).sort()
  }

  for (const [title, view] of Object.entries(views)) {
    it(title, async () => {
      const inline = await run(
        view,
        resources.map((resource) => ({ name: 'resource', resource })),
      )
      expect(inline.length).toBeGreaterThan(0)
      expect(await run(view, [{ name: 'source', valueString: String(sourceId) }])).toEqual(inline)
    })
  }

  it('keeps a number id a number, and reads a primitive extension', async () => {
    const rows = await run(views['primitive extensions and a numeric id'], [{ name: 'source', valueString: String(sourceId) }])
    expect(rows).toContain(JSON.stringify({ id: 7, born: null, precision: null, active: null, family: 'Numeric id', given: [] }))
    expect(rows.find((r) => r.includes('"p1"'))).toContain('"precision":"year"')
  })
})
