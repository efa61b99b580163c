import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BULK_BATCH_SIZE } from '../../src/connectors/fhir-bulk.ts'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { type BulkServer, startBulkServer } from '../helpers/fhir-bulk-server.ts'
import { patients } from '../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { allRecords, createPanel, createSource, currentRecords, runsOf, waitFor } from '../modules/datasources/fixtures.ts'

let fx: BulkServer
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  fx = await startBulkServer()
})
afterAll(() => fx.close())
beforeEach(async () => {
  fx.reset()
  for (const p of patients(3)) fx.put(p)
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})

const createBulk = (bulk: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  createSource(
    alice,
    panelId,
    { baseUrl: fx.baseUrl, mode: 'bulk', bulk: { level: 'system', since: 'auto', ...bulk }, ...extra },
    'fhir',
  )
const sync = (id: number) => alice.post(`/api/datasources/${id}/sync`)
const rows = async (id: number) =>
  (await currentRecords(t, id)).sort((a, b) => a.key.localeCompare(b.key)).map((r) => [r.key, r.data.active, r.data.gender])

describe('fhir sources in bulk mode through the API', () => {
  it('syncs an export, then with since auto only the changes since its transactionTime, deletions included', async () => {
    const created = await createBulk({ types: ['Patient'] })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ type: 'fhir', syncStatus: 'success', errorMessage: null })
    const first = fx.jobs.at(-1)!
    expect(first.since).toBeUndefined()
    expect(first.deleted).toBe(true)
    expect(created.body.config.lastSyncValue).toBe(first.transactionTime)
    expect(await rows(created.body.id)).toEqual([
      ['Patient/pat-1', true, 'female'],
      ['Patient/pat-2', true, 'male'],
      ['Patient/pat-3', true, 'female'],
    ])

    fx.put({ ...patients(3)[0], active: false })
    fx.remove('Patient', 'pat-2')
    fx.put(patients(4)[3])
    const res = await sync(created.body.id)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ syncStatus: 'success', status: 'success' })
    const second = fx.jobs.at(-1)!
    expect(second.since).toBe(first.transactionTime)
    expect(res.body.config.lastSyncValue).toBe(second.transactionTime)
    expect(await rows(created.body.id)).toEqual([
      ['Patient/pat-1', false, 'female'],
      ['Patient/pat-3', true, 'female'],
      ['Patient/pat-4', true, 'male'],
    ])
    expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({ status: 'success', rowsWritten: 2, rowsDeleted: 1 })

    // Nothing changed: the sync succeeds, moves the cursor, keeps the rows.
    const idle = await sync(created.body.id)
    expect(idle.body).toMatchObject({ syncStatus: 'success' })
    expect(idle.body.config.lastSyncValue).toBe(fx.jobs.at(-1)?.transactionTime)
    expect((await rows(created.body.id)).map((r) => r[0])).toEqual(['Patient/pat-1', 'Patient/pat-3', 'Patient/pat-4'])
  })

  it('kicks off asynchronously with _type and _typeFilter, and reads files behind the bearer when the manifest requires it', async () => {
    fx.state.token = 'bulk-token'
    fx.put({ resourceType: 'Observation', id: 'obs-1', status: 'final' })
    const before = fx.server.requests.length
    const created = await createBulk(
      { types: ['Patient', 'Observation'], typeFilters: ['Observation?status=final'] },
      { authentication: { type: 'bearer', token: 'bulk-token' } },
    )
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ syncStatus: 'success' })
    const job = fx.jobs.at(-1)!
    expect(job.types).toEqual(['Patient', 'Observation'])
    expect(job.typeFilters).toEqual(['Observation?status=final'])
    const sent = fx.server.requests.slice(before)
    expect(sent.find((r) => r.url === job.url)?.headers).toMatchObject({
      accept: 'application/fhir+json',
      prefer: 'respond-async',
      authorization: 'Bearer bulk-token',
    })
    const files = sent.filter((r) => r.url.includes('/bulk-files/'))
    expect(files.length).toBeGreaterThan(0)
    expect(files.every((r) => r.headers.authorization === 'Bearer bulk-token')).toBe(true)
    expect((await currentRecords(t, created.body.id)).map((r) => r.key).sort()).toEqual([
      'Observation/obs-1',
      'Patient/pat-1',
      'Patient/pat-2',
      'Patient/pat-3',
    ])
    expect(job.deleted).toBe(true)
    // Without the bearer the server refuses the kick-off: the sync fails with its OperationOutcome.
    const refused = await createBulk({}, {})
    expect(refused.body).toMatchObject({ syncStatus: 'error' })
    expect(refused.body.errorMessage).toContain('FHIR server responded 401 with an OperationOutcome')
  })

  it('exports a group: only its members', async () => {
    fx.groups.cohort = ['Patient/pat-1']
    const created = await createBulk({ level: 'group', groupId: 'cohort' })
    expect(created.body).toMatchObject({ syncStatus: 'success' })
    expect(fx.jobs.at(-1)?.url).toBe('/fhir/Group/cohort/$export')
    expect((await currentRecords(t, created.body.id)).map((r) => r.key)).toEqual(['Patient/pat-1'])
  })

  it('with since none, each sync is a whole export that replaces the rows', async () => {
    const created = await createBulk({ since: 'none' })
    expect(created.body.config.lastSyncValue).toBeUndefined()
    fx.remove('Patient', 'pat-3')
    await sync(created.body.id)
    expect(fx.jobs.at(-1)?.since).toBeUndefined()
    expect((await rows(created.body.id)).map((r) => r[0])).toEqual(['Patient/pat-1', 'Patient/pat-2'])
  })

  it('answers 400 naming the bulk fields', async () => {
    const res = await createBulk({ level: 'group', since: 'sometimes' })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['config.bulk.groupId', 'config.bulk.since'])
  })

  it('answers 400 naming an unknown bulk field or a timeout over a day, and stores nothing', async () => {
    const exports = fx.jobs.length
    const unknown = await createBulk({ types: ['Patient'], foo: 1 })
    expect(unknown.status).toBe(400)
    expect(unknown.body.details).toEqual([{ path: 'config.bulk', message: 'Unrecognized key: "foo"' }])
    const long = await createBulk({}, { timeout: 86_400_001 })
    expect(long.status).toBe(400)
    expect(long.body.details.map((d: { path: string }) => d.path)).toEqual(['config.timeout'])
    expect(fx.jobs).toHaveLength(exports)
    expect((await alice.get(`/api/panels/${panelId}/datasources`)).body).toEqual([])
    const ok = await createBulk({}, { timeout: 86_400_000 })
    expect(ok.status).toBe(201)
    expect(ok.body.config).toMatchObject({ timeout: 86_400_000, bulk: { level: 'system', since: 'auto' } })
  })

  const faults: [string, () => void, RegExp | string][] = [
    [
      'an OperationOutcome at the kick-off',
      () => {
        fx.state.kickOffOutcome = '_since is too far in the past'
      },
      'The FHIR bulk export failed at the kick-off: FHIR server responded 400 with an OperationOutcome: error: _since is too far in the past',
    ],
    [
      'an OperationOutcome at a poll',
      () => {
        fx.state.pollOutcome = 'Export job failed: disk full'
      },
      'The FHIR bulk export failed while polling the export status: FHIR server responded 500 with an OperationOutcome: error: Export job failed: disk full',
    ],
    [
      'lines in the error files',
      () => {
        fx.state.errorLines = ['Patient/pat-9 could not be exported']
      },
      'The FHIR bulk export reported 1 error: error: Patient/pat-9 could not be exported',
    ],
    [
      'a broken download',
      () => {
        fx.state.breakAfterLines = 0
      },
      /^The FHIR bulk export failed reading the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson: /,
    ],
    [
      'a poll asked for past the timeout',
      () => {
        fx.state.retryAfter = '60'
        fx.state.polls = 1
      },
      /the FHIR server asked to poll again in 60 s/,
    ],
    [
      'a manifest transactionTime that is not a FHIR instant',
      () => {
        fx.state.transactionTime = '2026-13-45T99:99:99Z'
      },
      `The FHIR bulk export failed while polling the export status: The FHIR server's completion manifest is not valid: transactionTime: "2026-13-45T99:99:99Z" is not a FHIR instant (such as 2026-01-31T12:00:00Z, with a real date and a zone)`,
    ],
    [
      'an output line whose id is not a FHIR id',
      () => {
        fx.state.extraLines = { Patient: [{ resourceType: 'Patient', id: 'x/../y' }] }
      },
      /^The FHIR bulk export failed reading the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson: Line 2 of the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson has id "x\/\.\.\/y", not a FHIR id/,
    ],
  ]
  for (const [what, breakIt, message] of faults) {
    it(`fails an incremental sync on ${what}, applying nothing and keeping the cursor`, async () => {
      const created = await createBulk({}, { timeout: 5000 })
      const before = await currentRecords(t, created.body.id)
      const cursor = created.body.config.lastSyncValue
      fx.put({ ...patients(3)[0], active: false })
      fx.remove('Patient', 'pat-2')
      breakIt()
      t.clock.advance(60_000)
      const res = await sync(created.body.id)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ syncStatus: 'error', status: 'error', recordsProcessed: 0 })
      if (typeof message === 'string') expect(res.body.errorMessage).toBe(message)
      else expect(res.body.errorMessage).toMatch(message)
      expect(res.body.config.lastSyncValue).toBe(cursor)
      expect(await currentRecords(t, created.body.id)).toEqual(before)
      expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({
        status: 'error',
        error: res.body.errorMessage,
        rowsWritten: 0,
        rowsDeleted: 0,
      })
    })
  }

  it('fails a whole export broken half-way (batches already written) and keeps the previous rows', async () => {
    const created = await createBulk({ since: 'none' })
    const before = await currentRecords(t, created.body.id)
    for (const p of patients(2 * BULK_BATCH_SIZE + 600)) fx.put({ ...p, active: false })
    fx.state.breakAfterLines = 2 * BULK_BATCH_SIZE + 300
    // Spaced lines reach the service before the connection is destroyed.
    fx.state.lineDelayMs = 1
    fx.state.lineDelayEvery = 20
    const res = await sync(created.body.id)
    expect(res.body).toMatchObject({ syncStatus: 'error', status: 'error', recordsProcessed: 0 })
    expect(res.body.errorMessage).toMatch(
      /^The FHIR bulk export failed reading the output file \/fhir\/bulk-files\/job-\d+\/Patient\.ndjson: /,
    )
    const run = (await runsOf(t, created.body.id)).at(-1)
    // The run had read (and written into its own generation) more than a batch before the break.
    expect(run).toMatchObject({ status: 'error', rowsWritten: 0 })
    expect(run?.rowsRead).toBeGreaterThanOrEqual(BULK_BATCH_SIZE)
    expect(await currentRecords(t, created.body.id)).toEqual(before)
    expect(await allRecords(t, created.body.id)).toHaveLength(before.length)
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
  })

  it('fails an incremental export broken half-way, applying nothing and keeping the cursor', async () => {
    const created = await createBulk()
    const before = await currentRecords(t, created.body.id)
    for (const p of patients(2 * BULK_BATCH_SIZE + 600)) fx.put({ ...p, active: false })
    fx.state.breakAfterLines = 2 * BULK_BATCH_SIZE + 300
    fx.state.lineDelayMs = 1
    fx.state.lineDelayEvery = 20
    t.clock.advance(60_000)
    const res = await sync(created.body.id)
    expect(res.body).toMatchObject({ syncStatus: 'error', recordsProcessed: 0 })
    expect(res.body.config.lastSyncValue).toBe(created.body.config.lastSyncValue)
    expect(await currentRecords(t, created.body.id)).toEqual(before)
  })

  it('fails a sync whose output file answers 500 with its OperationOutcome, applying nothing', async () => {
    const created = await createBulk({}, { retryAttempts: 0 })
    const before = await currentRecords(t, created.body.id)
    fx.put({ ...patients(3)[0], active: false })
    fx.state.fileStatus = 500
    t.clock.advance(60_000)
    const res = await sync(created.body.id)
    expect(res.body).toMatchObject({ syncStatus: 'error', recordsProcessed: 0 })
    expect(res.body.errorMessage).toBe(
      'The FHIR bulk export failed reading the output file /fhir/bulk-files/' +
        `${fx.jobs.at(-1)?.id}/Patient.ndjson: FHIR server responded 500 with an OperationOutcome: error: Cannot read Patient.ndjson`,
    )
    expect(res.body.config.lastSyncValue).toBe(created.body.config.lastSyncValue)
    expect(await currentRecords(t, created.body.id)).toEqual(before)
    expect(fx.jobs.at(-1)?.deleted).toBe(true)
  })

  it('a cancel stops the polls within a second, ends the run cancelled, deletes the job and keeps the rows', async () => {
    const created = await createBulk({}, { timeout: 60_000 })
    const before = await currentRecords(t, created.body.id)
    fx.put({ ...patients(3)[0], active: false })
    fx.state.polls = 100
    // A wait the invocation's budget holds on every runtime (Workers: 25 s), so the run waits in
    // place rather than suspending; a cancel of a suspended run: fhir.bulk.resume.test.ts.
    fx.state.retryAfter = '20'
    const jobsBefore = fx.jobs.length
    const started = await alice.post(`/api/datasources/${created.body.id}/sync?async=true`)
    expect(started.status).toBe(202)
    const job = await waitFor(async () => (fx.jobs[jobsBefore]?.pollTimes.length ? fx.jobs[jobsBefore] : undefined))
    const cancelledAt = Date.now()
    expect((await alice.post(`/api/datasources/${created.body.id}/sync/cancel`)).status).toBe(200)
    const run = await waitFor(async () => {
      const last = (await runsOf(t, created.body.id)).at(-1)
      return last?.status === 'syncing' ? undefined : last
    }, 10_000)
    expect(Date.now() - cancelledAt).toBeLessThan(3000)
    expect(run).toMatchObject({ status: 'cancelled', error: 'Synchronisation cancelled', rowsWritten: 0 })
    expect(job.pollTimes).toHaveLength(1)
    await waitFor(async () => (job.deleted ? true : undefined))
    expect(await currentRecords(t, created.body.id)).toEqual(before)
  })

  it('a whole export cancelled at its last batch stores no cursor: the cursor comes with the switch only', async () => {
    fx.state.polls = 1
    fx.state.errorLines = ['Patient/pat-1 could not be exported']
    const created = await createBulk()
    expect(created.body.syncStatus).toBe('error')
    fx.state.errorLines = []
    fx.state.lineDelayMs = 400
    const jobsBefore = fx.jobs.length
    const started = await alice.post(`/api/datasources/${created.body.id}/sync?async=true`)
    expect(started.status).toBe(202)
    // The manifest is out: the download (one batch, the last, with the cursor) is under way.
    await waitFor(async () => (fx.jobs[jobsBefore]?.pollTimes.length === 2 ? true : undefined))
    expect((await alice.post(`/api/datasources/${created.body.id}/sync/cancel`)).status).toBe(200)
    const run = await waitFor(async () => {
      const last = (await runsOf(t, created.body.id)).at(-1)
      return last?.status === 'syncing' ? undefined : last
    }, 10_000)
    expect(run).toMatchObject({ status: 'cancelled' })
    const stored = await t.client.execute({
      sql: "SELECT json_extract(config, '$.lastSyncValue') AS cursor FROM data_sources WHERE id = ?",
      args: [created.body.id],
    })
    expect(stored.rows[0].cursor).toBeNull()
    expect(await currentRecords(t, created.body.id)).toEqual([])
  })

  it('a failed first export stores no cursor and no rows; the next sync is whole again', async () => {
    fx.state.errorLines = ['Patient/pat-1 could not be exported']
    const created = await createBulk()
    expect(created.body).toMatchObject({ syncStatus: 'error' })
    expect(created.body.config.lastSyncValue).toBeUndefined()
    expect(await currentRecords(t, created.body.id)).toEqual([])
    fx.state.errorLines = []
    await sync(created.body.id)
    expect(fx.jobs.at(-1)?.since).toBeUndefined()
    expect(await currentRecords(t, created.body.id)).toHaveLength(3)
  })
})
