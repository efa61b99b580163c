import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { viewDefinitionExports } from '../../../src/db/schema.ts'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, serviceCtx, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { observations, patients, startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, REMOTE, SKIP } from '../../helpers/target.ts'
import { GIVEN_NAMES_VIEW } from '../../helpers/view-definitions.ts'

/**
 * Async `$viewdefinition-export` (docs/fhir.md "ViewDefinition export") under /api and /fhir: the
 * kick-off, polls, the manifest, downloads equal to `$viewdefinition-run`'s answer for the same
 * input, cancel and cleanup, expiry, bad input, and tenancy.
 */

const PATIENTS = 1200
let fhir: Awaited<ReturnType<typeof startFhirServer>>
let t: TestApp
let alice: TestClient
let sourceId: number
const filesDir = REMOTE ? undefined : mkdtempSync(join(tmpdir(), 'vd-export-'))

const params = (...parameter: Record<string, unknown>[]) => ({ resourceType: 'Parameters' as const, parameter })
const names = { ...GIVEN_NAMES_VIEW, name: 'given_names', status: 'active' }
const viewOf = (resource: unknown, name?: string) => ({
  name: 'view',
  part: [...(name ? [{ name: 'name', valueString: name }] : []), { name: 'viewResource', resource }],
})
const source = () => ({ name: 'source', valueString: String(sourceId) })
const format = (code: string) => ({ name: '_format', valueCode: code })

const request = async (method: string, path: string, body?: unknown, user = ['tenant-a', 'alice']) =>
  t.app.request(path, {
    method,
    headers: await authHeaders(user[0], user[1]),
    body: body === undefined ? undefined : JSON.stringify(body),
  })

/** The text `$viewdefinition-run` answers for the same parameters (without the export-only ones). */
const runText = async (body: unknown) => {
  const res = await request('POST', '/api/$viewdefinition-run', body)
  expect(res.status).toBe(200)
  return res.text()
}

/** Polls the status URL until it stops answering 202; returns the last answer. */
async function finished(location: string, user?: string[]) {
  for (let i = 0; i < 500; i++) {
    const res = await request('GET', location, undefined, user)
    if (res.status !== 202) return res
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`export ${location} did not finish`)
}

async function kickOff(path: string, body: unknown) {
  const res = await request('POST', path, body)
  expect(res.status).toBe(202)
  const location = res.headers.get('content-location')!
  expect(location).toMatch(/\/\$viewdefinition-export\/[0-9a-f-]{36}$/)
  return { res, location, id: location.split('/').pop()! }
}

const exportFiles = (id: string) => {
  const dir = join(filesDir!, 'exports', id)
  return existsSync(dir) ? readdirSync(dir) : []
}

beforeAll(async () => {
  fhir = await startFhirServer({ resources: { Patient: patients(PATIENTS), Observation: observations(20, 5) } })
  t = await makeTestApp({ filesDir })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  const panel = await alice.post('/api/panels', { name: 'SoF export', tenantId: 'tenant-a', userId: 'alice' })
  const created = await alice.post(`/api/panels/${panel.body.id}/datasources`, {
    type: 'fhir',
    config: { baseUrl: fhir.baseUrl, resourceTypes: ['Patient', 'Observation'] },
  })
  expect(created.body).toMatchObject({ syncStatus: 'success' })
  sourceId = created.body.id
}, 60_000)
afterAll(async () => {
  await fhir.close()
  if (filesDir) rmSync(filesDir, { recursive: true, force: true })
})

describe('POST /api/$viewdefinition-export', () => {
  it("exports a source's rows as ndjson: 202, polls, a manifest, a file equal to $viewdefinition-run's answer", async () => {
    const { res, location, id } = await kickOff(
      '/api/$viewdefinition-export',
      params(viewOf(names), source(), format('ndjson'), { name: 'clientTrackingId', valueString: 'batch-7' }),
    )
    expect(await res.json()).toMatchObject({
      resourceType: 'Parameters',
      parameter: expect.arrayContaining([
        { name: 'exportId', valueString: id },
        { name: 'clientTrackingId', valueString: 'batch-7' },
        { name: 'status', valueCode: 'accepted' },
        { name: 'location', valueUri: location },
      ]),
    })
    const done = await finished(location)
    expect(done.status).toBe(200)
    expect(done.headers.get('content-type')).toBe('application/json')
    const manifest = await done.json()
    expect(manifest).toEqual({
      transactionTime: t.clock.now().toISOString(),
      // The origin is the serving runtime's (localhost in-process, a loopback port on Deno).
      request: expect.stringMatching(/^http:\/\/[^/]+\/api\/\$viewdefinition-export$/),
      requiresAccessToken: true,
      exportId: id,
      clientTrackingId: 'batch-7',
      status: 'completed',
      exportStartTime: expect.any(String),
      exportEndTime: expect.any(String),
      output: [{ name: 'given_names', type: 'Patient', format: 'ndjson', count: PATIENTS * 2, url: `${location}/0.ndjson` }],
      error: [],
    })
    const file = await request('GET', manifest.output[0].url)
    expect(file.status).toBe(200)
    expect(file.headers.get('content-type')).toBe('application/x-ndjson')
    expect(file.headers.get('content-disposition')).toBe('attachment; filename="given_names.ndjson"')
    expect(await file.text()).toBe(await runText(params({ name: 'viewResource', resource: names }, source(), format('ndjson'))))
  })

  it('writes one csv file per view, stored or inline, each equal to the run of that view', async () => {
    const stored = await alice.post('/api/ViewDefinition', {
      resourceType: 'ViewDefinition',
      name: 'obs_values',
      status: 'active',
      resource: 'Observation',
      select: [
        {
          column: [
            { name: 'id', path: 'id' },
            { name: 'subject', path: 'subject.reference' },
          ],
        },
      ],
    })
    expect(stored.status).toBe(201)
    const body = params(
      viewOf(names, 'names'),
      { name: 'view', part: [{ name: 'viewReference', valueReference: { reference: `ViewDefinition/${stored.body.id}` } }] },
      source(),
      format('csv'),
    )
    const { location } = await kickOff('/api/ViewDefinition/$viewdefinition-export', body)
    const manifest = await (await finished(location)).json()
    expect(manifest.output.map((o: { name: string; type: string; format: string }) => [o.name, o.type, o.format])).toEqual([
      ['names', 'Patient', 'csv'],
      ['obs_values', 'Observation', 'csv'],
    ])
    const names0 = await request('GET', manifest.output[0].url)
    expect(names0.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(await names0.text()).toBe(await runText(params({ name: 'viewResource', resource: names }, source(), format('csv'))))
    const obs = await (await request('GET', manifest.output[1].url)).text()
    const obsRun = params(
      { name: 'viewReference', valueReference: { reference: `ViewDefinition/${stored.body.id}` } },
      source(),
      format('csv'),
    )
    expect(obs).toBe(await runText(obsRun))
    expect(obs.split('\r\n')[0]).toBe('id,subject')
    expect(manifest.output[1].count).toBe(obs.split('\r\n').length - 2)
  })

  it('exports a stored view by its URL over inline resources, patient-filtered, without the csv header', async () => {
    const stored = await alice.post('/api/ViewDefinition', names)
    const resources = patients(30).map((resource) => ({ name: 'resource', resource }))
    const filters = [
      { name: 'patient', valueReference: { reference: 'Patient/pat-3' } },
      { name: 'patient', valueReference: { reference: 'Patient/pat-12' } },
      { name: 'header', valueBoolean: false },
    ]
    const { location } = await kickOff(
      `/api/ViewDefinition/${stored.body.id}/$viewdefinition-export`,
      params(...resources, ...filters, format('csv')),
    )
    const manifest = await (await finished(location)).json()
    const text = await (await request('GET', manifest.output[0].url)).text()
    expect(
      text
        .trimEnd()
        .split('\r\n')
        .map((line) => line.split(',')[0]),
    ).toEqual(['pat-3', 'pat-3', 'pat-12', 'pat-12'])
    const one = await runText(
      params({ name: 'viewResource', resource: names }, ...resources, filters[0], filters[2], format('csv')),
    )
    const other = await runText(
      params({ name: 'viewResource', resource: names }, ...resources, filters[1], filters[2], format('csv')),
    )
    expect(text).toBe(one + other)
    if (filesDir) expect(exportFiles(manifest.exportId)).toEqual(['0.0.csv'])
  })

  it('answers a view that cannot run over its input as the failed export, naming the place', async () => {
    const bad = {
      resourceType: 'ViewDefinition',
      status: 'active',
      resource: 'Patient',
      select: [{ column: [{ name: 'g', path: 'name.given' }] }],
    }
    const { location } = await kickOff(
      '/api/$viewdefinition-export',
      params(viewOf(bad), { name: 'resource', resource: patients(2)[0] }),
    )
    const failed = await finished(location)
    expect(failed.status).toBe(400)
    expect(await failed.json()).toMatchObject({
      code: 'INVALID_VIEW_DEFINITION',
      details: [{ path: 'select[0].column[0].path' }],
    })
  })

  it.skipIf(onTarget(['workers', 'deno'], SKIP.bareNode))(
    'refuses on a runtime given no file storage, naming the runtime',
    async () => {
      const bare = await makeTestApp()
      const res = await clientFor(bare.app, 'tenant-a', 'alice').post(
        '/api/$viewdefinition-export',
        params(viewOf(names), { name: 'resource', resource: patients(1)[0] }),
      )
      expect(res.status).toBe(400)
      expect(res.body.message).toMatch(/^\$viewdefinition-export needs file storage, which the node runtime was not given/)
    },
  )

  it('refuses bad parameters with a 400 naming each', async () => {
    const cases: [unknown, string, RegExp][] = [
      [params(source()), 'parameter', /at least one view/],
      [params(viewOf(names), format('json')), 'parameter[1].valueCode', /_format must be ndjson or csv/],
      [
        params(viewOf(names), { name: 'group', valueReference: { reference: 'Group/1' } }),
        'parameter[1].name',
        /group is not supported/,
      ],
      [
        params(viewOf(names), { name: '_since', valueInstant: 'yesterday' }),
        'parameter[1].valueInstant',
        /_since must be an instant/,
      ],
      [params(viewOf(names), { name: '_limit', valueInteger: 3 }), 'parameter[1].name', /unknown parameter _limit/],
      [params({ name: 'view', part: [{ name: 'name', valueString: 'x' }] }), 'parameter[0].part', /exactly one of viewResource/],
      [params(viewOf(names), source(), { name: 'resource', resource: patients(1)[0] }), 'parameter', /cannot be combined/],
    ]
    for (const [body, path, message] of cases) {
      const res = await alice.post('/api/$viewdefinition-export', body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(res.body.details).toContainEqual({ path, message: expect.stringMatching(message) })
    }
    const invalidView = await alice.post(
      '/api/$viewdefinition-export',
      params(viewOf({ resource: 'Patient', select: [{ column: [{ path: 'id' }] }] })),
    )
    expect(invalidView.status).toBe(400)
    expect(invalidView.body.code).toBe('INVALID_VIEW_DEFINITION')
    expect(invalidView.body.details[0].path).toMatch(/^view\[0\]/)
  })
})

describe('the export under /fhir', () => {
  it('kicks off, polls and downloads as FHIR JSON, with URLs under /fhir', async () => {
    const { res, location } = await kickOff('/fhir/ViewDefinition/$viewdefinition-export', params(viewOf(names), source()))
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    expect(location).toMatch(/^http:\/\/[^/]+\/fhir\/\$viewdefinition-export\//)
    const done = await finished(location)
    expect(done.headers.get('content-type')).toBe('application/fhir+json')
    const manifest = await done.json()
    expect(manifest.request).toMatch(/^http:\/\/[^/]+\/fhir\/ViewDefinition\/\$viewdefinition-export$/)
    expect(manifest.output[0].url).toBe(`${location}/0.ndjson`)
    expect((await (await request('GET', manifest.output[0].url)).text()).split('\n')).toHaveLength(PATIENTS * 2 + 1)
  })

  it('answers bad input and a missing token with an OperationOutcome naming the parameter', async () => {
    const res = await request('POST', '/fhir/$viewdefinition-export', params(viewOf(names), format('parquet')))
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    expect(await res.json()).toMatchObject({
      resourceType: 'OperationOutcome',
      issue: [{ severity: 'error', code: 'invalid', expression: ['parameter[1].valueCode'] }],
    })
    const anonymous = await t.app.request('/fhir/$viewdefinition-export', { method: 'POST', body: '{}' })
    expect(anonymous.status).toBe(401)
    expect((await anonymous.json()).resourceType).toBe('OperationOutcome')
  })

  it('lists ViewDefinition and its two operations in the CapabilityStatement', async () => {
    const statement = await (await t.app.request('/fhir/metadata')).json()
    const entry = statement.rest[0].resource.find((r: { type: string }) => r.type === 'ViewDefinition')
    expect(entry.operation.map((o: { name: string }) => o.name).sort()).toEqual(['viewdefinition-export', 'viewdefinition-run'])
  })
})

describe('GET/DELETE of the status URL: progress, cancel, cleanup, expiry, tenancy', () => {
  const serverless = () => serviceCtx({ ...t.deps, runtime: 'workers' }, 'tenant-a', 'alice')

  it.skipIf(onTarget(['workers', 'deno'], SKIP.serverFiles))(
    'proceeds slice by slice in parts: 202 with X-Progress and Retry-After, a poll carries it on, the parts read as one file',
    async () => {
      const { startExport } = await import('../../../src/modules/viewdefinitions/viewdefinitions.export.service.ts')
      // As on Workers: one slice per request, which writes one part of 100 resources.
      const job = await startExport(serverless(), params(viewOf(names), source()), 'http://localhost/api/x', undefined, {
        partResources: 100,
        budgetMs: 0,
      })
      let row = await waitFor(job.id, (r) => r.leaseId === null && r.views[0].parts === 1)
      expect(row.cursor).toMatchObject({ view: 0, read: 100, done: 100 })
      const location = `/api/$viewdefinition-export/${job.id}`
      const poll = await request('GET', location)
      expect(poll.status).toBe(202)
      expect(poll.headers.get('retry-after')).toBe('2')
      expect(poll.headers.get('x-progress')).toMatch(/^\d+% \(\d+ of 1220 resources read; view 1 of 1\)$/)
      const done = await finished(location)
      row = await waitFor(job.id, (r) => r.status === 'completed')
      expect(row.views[0].parts).toBeGreaterThan(1)
      const manifest = await done.json()
      expect(await (await request('GET', manifest.output[0].url)).text()).toBe(
        await runText(params({ name: 'viewResource', resource: names }, source(), format('ndjson'))),
      )
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.serverFiles))(
    'is carried on by the maintenance tick when nobody runs it',
    async () => {
      const { startExport } = await import('../../../src/modules/viewdefinitions/viewdefinitions.export.service.ts')
      const job = await startExport(serverless(), params(viewOf(names), source()), 'http://localhost/api/x', undefined, {
        partResources: 100,
        budgetMs: 0,
      })
      await waitFor(job.id, (r) => r.leaseId === null && r.views[0].parts === 1)
      expect((await runMaintenanceTick(t.deps)).exports.resumed).toBe(1)
      const row = await waitFor(job.id, (r) => r.status === 'completed')
      expect(row.views[0].rows).toBe(PATIENTS * 2)
      expect(row.cursor.done).toBe(1220)
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.serverFiles))(
    'DELETE cancels a running job: 404 at once, its files removed by the tick once its runner is gone',
    async () => {
      const { startExport } = await import('../../../src/modules/viewdefinitions/viewdefinitions.export.service.ts')
      const job = await startExport(serverless(), params(viewOf(names), source()), 'http://localhost/api/x', undefined, {
        partResources: 100,
        budgetMs: 0,
      })
      await waitFor(job.id, (r) => r.leaseId === null && r.views[0].parts === 1)
      expect(exportFiles(job.id)).toEqual(['0.0.ndjson'])
      // Another runner holds it now.
      await t.deps.db
        .update(viewDefinitionExports)
        .set({ leaseId: 'elsewhere', leaseExpiresAt: new Date(t.clock.now().getTime() + 60_000).toISOString() })
        .where(eq(viewDefinitionExports.id, job.id))
      expect((await request('DELETE', `/api/$viewdefinition-export/${job.id}`)).status).toBe(202)
      expect((await request('GET', `/api/$viewdefinition-export/${job.id}`)).status).toBe(404)
      expect((await request('GET', `/api/$viewdefinition-export/${job.id}/0.ndjson`)).status).toBe(404)
      expect((await runMaintenanceTick(t.deps)).exports.removed).toBe(0)
      expect(exportFiles(job.id)).toEqual(['0.0.ndjson'])
      t.clock.advance(61_000)
      expect((await runMaintenanceTick(t.deps)).exports.removed).toBe(1)
      expect(exportFiles(job.id)).toEqual([])
      expect(await t.deps.db.select().from(viewDefinitionExports).where(eq(viewDefinitionExports.id, job.id))).toEqual([])
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.serverFiles))(
    'fails with a 409 when its source is synchronised again before it ends, and removes its files',
    async () => {
      const { startExport } = await import('../../../src/modules/viewdefinitions/viewdefinitions.export.service.ts')
      const job = await startExport(serverless(), params(viewOf(names), source()), 'http://localhost/api/x', undefined, {
        partResources: 100,
        budgetMs: 0,
      })
      await waitFor(job.id, (r) => r.leaseId === null && r.views[0].parts === 1)
      expect((await alice.post(`/api/datasources/${sourceId}/sync`, {})).status).toBe(200)
      const failed = await finished(`/api/$viewdefinition-export/${job.id}`)
      expect(failed.status).toBe(409)
      expect((await failed.json()).message).toMatch(
        new RegExp(`Data source ${sourceId} was synchronised again during the export`),
      )
      expect(exportFiles(job.id)).toEqual([])
    },
  )

  it("writes a download of a source's export to the read audit, with the source, its panel and the rows", async () => {
    const { location } = await kickOff('/api/$viewdefinition-export', params(viewOf(names), source()))
    const manifest = await (await finished(location)).json()
    await t.client.execute('DELETE FROM access_records')
    expect((await request('GET', manifest.output[0].url)).status).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const records = await t.client.execute('SELECT user_id, action, data_source_id, row_count, outcome FROM access_records')
    expect(records.rows.map((r) => ({ ...r }))).toMatchObject([
      { user_id: 'alice', action: 'read', data_source_id: sourceId, row_count: PATIENTS * 2, outcome: 'success' },
    ])
  })

  it('DELETE of a running job stops it and leaves nothing behind', async () => {
    const { location, id } = await kickOff('/api/$viewdefinition-export', params(viewOf(names), source()))
    const deleted = await request('DELETE', location)
    expect(deleted.status).toBe(202)
    expect((await request('GET', location)).status).toBe(404)
    expect((await request('DELETE', location)).status).toBe(404)
    await waitFor(id, (r) => r === undefined)
    if (filesDir) expect(exportFiles(id)).toEqual([])
  })

  it('DELETE removes a completed job and its files; the tick removes expired ones after EXPORT_TTL_HOURS', async () => {
    const first = await kickOff('/api/$viewdefinition-export', params(viewOf(names), source()))
    const url = (await (await finished(first.location)).json()).output[0].url
    if (filesDir) expect(exportFiles(first.id)).toEqual(['0.0.ndjson'])
    expect((await request('DELETE', first.location)).status).toBe(202)
    expect((await request('GET', url)).status).toBe(404)
    if (filesDir) expect(exportFiles(first.id)).toEqual([])

    const second = await kickOff('/api/$viewdefinition-export', params(viewOf(names), source()))
    const manifest = await (await finished(second.location)).json()
    t.clock.advance(23 * 3600_000)
    expect((await request('GET', manifest.output[0].url)).status).toBe(200)
    t.clock.advance(3600_000 + 1)
    expect((await request('GET', second.location)).status).toBe(404)
    expect((await request('GET', manifest.output[0].url)).status).toBe(404)
    const tick = await runMaintenanceTick(t.deps, t.clock.now())
    expect(tick.exports.removed).toBeGreaterThanOrEqual(1)
    if (filesDir) expect(exportFiles(second.id)).toEqual([])
    await waitFor(second.id, (r) => r === undefined)
  })

  it("answers 404 for another tenant's or user's job, file and source", async () => {
    const { location, id } = await kickOff('/api/$viewdefinition-export', params(viewOf(names), source()))
    const url = (await (await finished(location)).json()).output[0].url
    for (const user of [
      ['tenant-b', 'bob'],
      ['tenant-a', 'carol'],
    ]) {
      expect((await request('GET', location, undefined, user)).status).toBe(404)
      expect((await request('GET', url, undefined, user)).status).toBe(404)
      expect((await request('GET', `/fhir/$viewdefinition-export/${id}`, undefined, user)).status).toBe(404)
      expect((await request('DELETE', location, undefined, user)).status).toBe(404)
      expect((await request('POST', '/api/$viewdefinition-export', params(viewOf(names), source()), user)).status).toBe(404)
    }
    expect((await request('GET', url)).status).toBe(200)
  })
})

/** The job's row once `ready` holds of it (undefined: the row is gone). */
async function waitFor(id: string, ready: (row: any) => boolean) {
  for (let i = 0; i < 500; i++) {
    const [row] = await t.deps.db.select().from(viewDefinitionExports).where(eq(viewDefinitionExports.id, id))
    if (ready(row)) return row as typeof viewDefinitionExports.$inferSelect
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`export ${id} never reached the awaited state`)
}

describe('ViewDefinition under /fhir', () => {
  it('stores, reads, lists as a searchset Bundle and runs views as FHIR JSON', async () => {
    const fhirClient = clientFor(t.app, 'tenant-a', 'dora')
    const created = await fhirClient.post('/fhir/ViewDefinition', names)
    expect(created.status).toBe(201)
    expect(created.headers.get('content-type')).toBe('application/fhir+json')
    expect(created.headers.get('location')).toMatch(new RegExp(`^http://[^/]+/fhir/ViewDefinition/${created.body.id}$`))
    const read = await fhirClient.get(`/fhir/ViewDefinition/${created.body.id}`)
    expect(read.body).toMatchObject({ resourceType: 'ViewDefinition', id: created.body.id, name: 'given_names' })
    const list = await fhirClient.get('/fhir/ViewDefinition?resource=Patient')
    expect(list.body).toMatchObject({
      resourceType: 'Bundle',
      type: 'searchset',
      total: 1,
      entry: [
        {
          fullUrl: expect.stringMatching(new RegExp(`^http://[^/]+/fhir/ViewDefinition/${created.body.id}$`)),
          resource: { id: created.body.id },
        },
      ],
    })
    const run = await fhirClient.post(
      `/fhir/ViewDefinition/${created.body.id}/$viewdefinition-run`,
      params({ name: 'resource', resource: patients(1)[0] }),
    )
    expect(run.body).toEqual([
      { id: 'pat-1', family: 'Smith', given: 'Ada' },
      { id: 'pat-1', family: 'Smith', given: 'Q.' },
    ])
    const missing = await fhirClient.get('/fhir/ViewDefinition/999999')
    expect(missing.status).toBe(404)
    expect(missing.body.resourceType).toBe('OperationOutcome')
    expect((await clientFor(t.app, 'tenant-b', 'dora').get(`/fhir/ViewDefinition/${created.body.id}`)).status).toBe(404)
  })
})

// Last: on the workers and deno targets another environment restarts the shared server on an emptied database.
describe('PUBLIC_BASE_URL', () => {
  it('names its URLs from PUBLIC_BASE_URL when set', async () => {
    const dir = REMOTE ? undefined : mkdtempSync(join(tmpdir(), 'vd-export-base-'))
    try {
      const based = await makeTestApp({ filesDir: dir, env: { PUBLIC_BASE_URL: 'https://panels.example.org/base' } })
      for (const face of ['fhir', 'api']) {
        const res = await based.app.request(`/${face}/$viewdefinition-export`, {
          method: 'POST',
          headers: await authHeaders('tenant-a', 'alice'),
          body: JSON.stringify(params(viewOf(names), { name: 'resource', resource: patients(1)[0] })),
        })
        expect(res.status).toBe(202)
        expect(res.headers.get('content-location')).toMatch(
          new RegExp(`^https://panels\\.example\\.org/base/${face}/\\$viewdefinition-export/[0-9a-f-]{36}$`),
        )
        // Finished before its folder goes.
        const path = new URL(res.headers.get('content-location')!).pathname.replace(/^\/base/, '')
        for (let i = 0; i < 500; i++) {
          const poll = await based.app.request(path, { headers: await authHeaders('tenant-a', 'alice') })
          if (poll.status !== 202) {
            expect(poll.status).toBe(200)
            break
          }
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      }
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true })
    }
  })
})
