import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { dataSources, syncRuns } from '../../../src/db/schema.ts'
import { recoverInterruptedSyncs } from '../../../src/modules/datasources/datasources.sync-lease.ts'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import {
  type ApiFixture,
  apiSourceSuite,
  createPanel,
  createSource,
  currentRecords,
  PATIENTS,
  runsOf,
  waitFor,
} from './fixtures.ts'

let api: ApiFixture
let t: TestApp
let alice: TestClient
let panelId: number

apiSourceSuite((suite) => {
  ;({ api, t, alice, panelId } = suite)
})

const apiConfig = (path = '/patients', extra: Record<string, unknown> = {}) => ({
  apiEndpoint: `${api.server.url}${path}`,
  keyField: 'id',
  ...extra,
})
const sourceRow = async (id: number) => (await t.deps.db.select().from(dataSources).where(eq(dataSources.id, id)))[0]

describe('POST /api/datasources/{id}/sync/cancel', () => {
  it('stops a running sync at its next batch boundary, keeping the previous records', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    await t.deps.db
      .update(dataSources)
      .set({ config: apiConfig('/held') })
      .where(eq(dataSources.id, source.id))
    api.state.patients = [{ id: 'x1', name: 'New', age: 1 }]
    const started = await alice.post(`/api/datasources/${source.id}/sync?async=true`)
    expect(started.status).toBe(202)
    await waitFor(async () => api.state.release)

    const cancel = await alice.post(`/api/datasources/${source.id}/sync/cancel`)
    expect(cancel.status).toBe(200)
    expect(cancel.body).toMatchObject({ id: started.body.id, status: 'syncing' })
    api.state.release?.()

    const run = await waitFor(async () => {
      const runs = await runsOf(t, source.id)
      const last = runs.at(-1)
      return last?.status === 'syncing' ? undefined : last
    })
    expect(run).toMatchObject({ status: 'cancelled', error: 'Synchronisation cancelled', rowsWritten: 0 })
    expect(await sourceRow(source.id)).toMatchObject({ syncStatus: 'cancelled', errorMessage: null, leaseRunId: null })
    expect((await currentRecords(t, source.id)).map((r) => r.key)).toEqual(['p1', 'p2', 'p3'])
    const all = await t.client.execute({ sql: 'SELECT count(*) AS n FROM records WHERE data_source_id = ?', args: [source.id] })
    expect(Number(all.rows[0].n)).toBe(3)
  })

  it('answers 409 when no sync is running', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const res = await alice.post(`/api/datasources/${source.id}/sync/cancel`)
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ code: 'CONFLICT', message: `No synchronisation of data source ${source.id} is running` })
  })

  it("answers 404 for another tenant's source", async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const mallory = clientFor(t.app, 'tenant-b', 'mallory')
    expect((await mallory.post(`/api/datasources/${source.id}/sync/cancel`)).status).toBe(404)
  })
})

describe('crash recovery', () => {
  async function leftSyncing(leaseExpiresAt: string) {
    const { body: source } = await createSource(alice, panelId, apiConfig())
    const [run] = await t.deps.db
      .insert(syncRuns)
      .values({
        tenantId: 'tenant-a',
        dataSourceId: source.id,
        status: 'syncing',
        trigger: 'manual',
        generation: 2,
        startedAt: '2026-01-01T12:00:00.000Z',
      })
      .returning()
    await t.deps.db
      .update(dataSources)
      .set({ syncStatus: 'syncing', leaseRunId: run.id, leaseExpiresAt })
      .where(eq(dataSources.id, source.id))
    return { source, run }
  }

  it('marks a sync whose lease ran out as interrupted, makes it due and lets a new sync run', async () => {
    const { source, run } = await leftSyncing('2026-01-01T11:00:00.000Z')
    expect(await recoverInterruptedSyncs(t.deps.db, t.clock.now())).toBe(1)
    const row = await sourceRow(source.id)
    expect(row).toMatchObject({ syncStatus: 'error', leaseRunId: null, nextSyncAt: '2026-01-01T12:00:00.000Z' })
    expect(row.errorMessage).toMatch(/interrupted/)
    const [finished] = await t.deps.db.select().from(syncRuns).where(eq(syncRuns.id, run.id))
    expect(finished).toMatchObject({ status: 'error' })
    expect((await alice.post(`/api/datasources/${source.id}/sync`)).body).toMatchObject({ syncStatus: 'success' })
  })

  it('leaves a sync with a live lease alone unless told every sync was interrupted', async () => {
    const { source } = await leftSyncing('2026-01-01T12:05:00.000Z')
    expect(await recoverInterruptedSyncs(t.deps.db, t.clock.now())).toBe(0)
    expect((await sourceRow(source.id)).syncStatus).toBe('syncing')
    expect(await recoverInterruptedSyncs(t.deps.db, t.clock.now(), true)).toBe(1)
    expect((await sourceRow(source.id)).syncStatus).toBe('error')
  })
})

describe('scheduled syncs', () => {
  it('sets nextSyncAt from schedule and timezone, and runMaintenanceTick runs the source when it is due', async () => {
    const { body: source } = await createSource(
      alice,
      panelId,
      apiConfig('/patients', { schedule: '0 6 * * *', timezone: 'Europe/Paris' }),
    )
    expect(source.nextSyncAt).toBe('2026-01-02T05:00:00.000Z')

    expect(await runMaintenanceTick(t.deps)).toMatchObject({ started: 0 })
    api.state.patients = [PATIENTS[0]]
    t.clock.set('2026-01-02T05:00:30.000Z')
    expect(await runMaintenanceTick(t.deps)).toMatchObject({ started: 1, succeeded: 1, failed: 0 })

    const row = await sourceRow(source.id)
    expect(row).toMatchObject({
      syncStatus: 'success',
      lastSyncAt: '2026-01-02T05:00:30.000Z',
      nextSyncAt: '2026-01-03T05:00:00.000Z',
    })
    expect((await runsOf(t, source.id)).at(-1)).toMatchObject({ trigger: 'schedule', rowsWritten: 1, rowsDeleted: 2 })
    expect((await currentRecords(t, source.id)).map((r) => r.key)).toEqual(['p1'])
  })

  it('never runs sources of a deleted panel, and skips a source another runner holds', async () => {
    const { body: a } = await createSource(alice, panelId, apiConfig('/patients', { schedule: '*/5 * * * *' }))
    const other = (await createPanel(alice, 'Other')).id
    const { body: b } = await createSource(alice, other, apiConfig('/patients', { schedule: '*/5 * * * *' }))
    expect((await alice.delete(`/api/panels/${other}`)).status).toBe(204)
    await t.deps.db
      .update(dataSources)
      .set({ leaseRunId: 999, leaseExpiresAt: '2026-01-01T13:00:00.000Z' })
      .where(eq(dataSources.id, a.id))
    t.clock.set('2026-01-01T12:10:00.000Z')
    expect(await runMaintenanceTick(t.deps)).toMatchObject({ started: 0 })
    void b
  })

  it('answers 400 naming config.schedule and config.timezone when they are invalid', async () => {
    const res = await createSource(alice, panelId, apiConfig('/patients', { schedule: 'every day', timezone: 'Mars/Olympus' }))
    expect(res.status).toBe(400)
    const paths = (res.body.details as { path: string }[]).map((d) => d.path)
    expect(paths).toEqual(expect.arrayContaining(['config.schedule', 'config.timezone']))
  })

  it('notifies every view owner of a scheduled sync, the panel owner included', async () => {
    const { body: source } = await createSource(alice, panelId, apiConfig('/patients', { schedule: '*/5 * * * *' }))
    await alice.post('/api/views', {
      name: 'Mine',
      panelId,
      config: { columns: [], groupBy: [], layout: 'table' },
      tenantId: 'tenant-a',
      userId: 'alice',
    })
    api.state.patients = [...PATIENTS, { id: 'p9', name: 'Barbara', age: 30 }]
    t.clock.set('2026-01-01T12:05:00.000Z')
    await runMaintenanceTick(t.deps)
    const res = await alice.get('/api/notifications/views?isRead=false')
    expect(res.body.notifications.map((n: { type: string; message: string }) => [n.type, n.message])).toEqual([
      ['DATA_CHANGED', 'View "Mine": 1 row entered (sync)'],
    ])
    void source
  })
})

describe('service limits', () => {
  it('ends a sync in error when the source has more records than SYNC_MAX_RECORDS', async () => {
    const limited = await makeTestApp({ env: { SYNC_MAX_RECORDS: '2' } })
    const c = clientFor(limited.app, 'tenant-a', 'alice')
    const panel = await createPanel(c)
    const res = await createSource(c, panel.id, apiConfig())
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ syncStatus: 'error', lastSyncAt: null })
    expect(res.body.errorMessage).toBe("The source has more than 2 records, the service's limit for one synchronisation")
  })
})
