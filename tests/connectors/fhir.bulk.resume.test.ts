import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BULK_BATCH_SIZE } from '../../src/connectors/fhir-bulk.ts'
import { dataSources } from '../../src/db/schema.ts'
import { runSync } from '../../src/modules/datasources/datasources.sync.ts'
import { runMaintenanceTick } from '../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, serviceCtx, type TestApp } from '../helpers/app.ts'
import { type BulkServer, startBulkServer } from '../helpers/fhir-bulk-server.ts'
import { patients } from '../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { onTarget, SKIP } from '../helpers/target.ts'
import { tomlList } from '../helpers/wrangler-toml.ts'
import { allRecords, createPanel, createSource, currentRecords, runsOf, waitFor } from '../modules/datasources/fixtures.ts'

/**
 * A bulk export across invocations (docs/connectors-fhir.md "Exports across invocations"): with an
 * invocation budget (SYNC_INVOCATION_SECONDS, 25 s on Workers) a sync hands the rest of its export
 * to a later tick, which polls or reads on from the saved progress instead of kicking off anew.
 */

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
  // Every export here answers one 202 first: the polls are what suspends and resumes.
  fx.state.polls = 1
  for (const p of patients(3)) fx.put(p)
  t = await makeTestApp({ env: { SYNC_INVOCATION_SECONDS: '1' } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
  jobsBefore = fx.jobs.length
})

const createBulk = (bulk: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  createSource(
    alice,
    panelId,
    { baseUrl: fx.baseUrl, mode: 'bulk', bulk: { level: 'system', since: 'auto', ...bulk }, ...extra },
    'fhir',
  )
/** Three batches of the export. */
const N = 3 * BULK_BATCH_SIZE
const tick = () => t.tick()
const keys = async (id: number) => (await currentRecords(t, id)).map((r) => r.key).sort()
const checkpointOf = async (runId: number, app = t) =>
  (await app.client.execute({ sql: 'SELECT checkpoint FROM sync_runs WHERE id = ?', args: [runId] })).rows[0].checkpoint
const sourceOf = async (id: number) => {
  const [source] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, id))
  return source
}
const stagedCount = async (runId: number) =>
  Number(
    (await t.client.execute({ sql: 'SELECT count(*) AS n FROM sync_staged_records WHERE run_id = ?', args: [runId] })).rows[0].n,
  )
/** The export jobs the fixture got since the test began (the fixture keeps every test's). */
let jobsBefore = 0
const jobs = () => fx.jobs.slice(jobsBefore)
/** The interval of the Workers cron trigger (wrangler.toml `crons`: every N minutes), in ms. */
const cronIntervalMs = () => Number(/^\*\/(\d+) \* \* \* \*$/.exec(tomlList('crons')[0] ?? '')?.[1]) * 60_000

describe('bulk exports across invocations', () => {
  it('a Retry-After past the budget suspends the run; the tick after that time polls on, never kicks off anew', async () => {
    fx.state.retryAfter = '5'
    const created = await createBulk({ types: ['Patient'] })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ syncStatus: 'syncing' })
    const id = created.body.id
    expect(jobs()).toHaveLength(1)
    const job = jobs()[0]
    expect(job.pollTimes).toHaveLength(1)
    expect(job.deleted).toBe(false)
    const [run] = await runsOf(t, id)
    expect(run).toMatchObject({ status: 'syncing', finishedAt: null })
    expect(await checkpointOf(run.id)).toContain(job.id)
    expect(await currentRecords(t, id)).toEqual([])

    // While the run waits for its time, a sync call finds it running, and a tick leaves it be.
    const busy = await alice.post(`/api/datasources/${id}/sync`)
    expect(busy.status).toBe(409)
    t.clock.advance(4_000)
    expect(await tick()).toMatchObject({ recovered: 0, started: 0 })
    expect(job.pollTimes).toHaveLength(1)

    t.clock.advance(1_001)
    expect(await tick()).toMatchObject({ recovered: 0, started: 1, succeeded: 1 })
    expect(jobs()).toHaveLength(1)
    expect(job.pollTimes).toHaveLength(2)
    expect(job.deleted).toBe(true)
    expect(await keys(id)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    const runs = await runsOf(t, id)
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ id: run.id, status: 'success', rowsWritten: 3 })
    expect(await checkpointOf(run.id)).toBeNull()
    expect(await sourceOf(id)).toMatchObject({ syncStatus: 'success', config: { lastSyncValue: job.transactionTime } })
  })

  it('a sync call after the resume time resumes the run too', async () => {
    fx.state.retryAfter = '5'
    const created = await createBulk()
    t.clock.advance(5_001)
    const res = await alice.post(`/api/datasources/${created.body.id}/sync`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ syncStatus: 'success', status: 'success' })
    expect(jobs()).toHaveLength(1)
    expect(await runsOf(t, created.body.id)).toHaveLength(1)
  })

  for (const since of ['none', 'auto'] as const) {
    it(`since ${since}: a budget spent mid-download commits what was read apart; the next invocations read on from there; rows change at the end`, async () => {
      fx.state.polls = 0
      const created = await createBulk({ since })
      expect(created.body).toMatchObject({ syncStatus: 'success' })
      const id = created.body.id
      // Three batches, sent over about 1.5 s: the 1 s budget ends after a batch has committed.
      for (const p of patients(N)) fx.put(p)
      fx.state.lineDelayMs = 1
      fx.state.lineDelayEvery = Math.ceil(N / 1500)
      const res = await alice.post(`/api/datasources/${id}/sync`)
      expect(res.body).toMatchObject({ syncStatus: 'syncing', status: 'syncing' })
      // The first invocation committed a batch (into the run's generation, or staged); readers still see the old rows.
      expect(await keys(id)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
      const [run] = (await runsOf(t, id)).slice(-1)
      expect(run.rowsRead).toBeGreaterThanOrEqual(BULK_BATCH_SIZE)
      if (since === 'none') expect((await allRecords(t, id)).length).toBeGreaterThan(3)
      else expect(await stagedCount(run.id)).toBeGreaterThanOrEqual(BULK_BATCH_SIZE)
      const job = jobs().at(-1)!
      let ticks = 0
      while ((await sourceOf(id)).syncStatus === 'syncing' && ticks < 10) {
        t.clock.advance(1)
        expect(await tick()).toMatchObject({ recovered: 0, started: 1 })
        ticks++
      }
      expect(ticks).toBeGreaterThan(0)
      expect(await sourceOf(id)).toMatchObject({ syncStatus: 'success' })
      expect(jobs().at(-1)).toBe(job)
      expect(job.deleted).toBe(true)
      expect(job.pollTimes).toHaveLength(1)
      const stored = await keys(id)
      expect(stored).toHaveLength(N)
      expect(new Set(stored).size).toBe(N)
      expect((await allRecords(t, id)).length).toBe(N)
      expect((await runsOf(t, id)).at(-1)).toMatchObject({ status: 'success', rowsWritten: N, rowsRead: N })
      expect(await stagedCount(run.id)).toBe(0)
      if (since === 'auto') {
        expect(job.since).toBe(created.body.config.lastSyncValue)
        expect((await sourceOf(id))?.config.lastSyncValue).toBe(job.transactionTime)
      }
    })
  }

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    "the budget counts from the invocation's start where deps are per invocation (a tick's runs share it)",
    async () => {
      fx.state.polls = 0
      const created = await createBulk({ since: 'none' })
      expect(created.body).toMatchObject({ syncStatus: 'success' })
      fx.state.polls = 1
      fx.state.retryAfter = '1'
      const source = await sourceOf(created.body.id)
      // An invocation that began 2 s ago has spent its 1 s: the run suspends at its first wait.
      const late = serviceCtx({ ...t.deps, invocationStartedAt: performance.now() - 2_000 }, 'tenant-a', 'alice')
      const outcome = await runSync(late, source, 'manual')
      expect(outcome.run.status).toBe('syncing')
      expect(jobs().at(-1)?.pollTimes).toHaveLength(1)
      expect(jobs().at(-1)?.deleted).toBe(false)
    },
  )

  it('the timeout counts from the kick-off across invocations', async () => {
    fx.state.retryAfter = '3'
    fx.state.polls = 5
    const created = await createBulk({}, { timeout: 5_000 })
    expect(created.body).toMatchObject({ syncStatus: 'syncing' })
    const job = jobs()[0]
    // 3 s after the kick-off the server asks for 3 s more: past the 5 s the source allows in all.
    t.clock.advance(3_001)
    expect(await tick()).toMatchObject({ started: 1, failed: 1 })
    const source = await sourceOf(created.body.id)
    expect(source.syncStatus).toBe('error')
    expect(source.errorMessage).toMatch(
      /^The FHIR bulk export failed while polling the export status: The bulk export was not complete within the source's timeout \(5000 ms\)/,
    )
    expect(job.deleted).toBe(true)
    expect(await currentRecords(t, created.body.id)).toEqual([])
  })

  it('with the default timeout of a bulk source an export outlives cron intervals: resumed ticks apart, it completes', async () => {
    const interval = cronIntervalMs()
    expect(interval).toBe(5 * 60_000)
    fx.state.retryAfter = '5'
    fx.state.polls = 2
    // A bulk source's timeout is an hour unless given: the export is not ended at the next tick.
    const created = await createBulk({ types: ['Patient'] })
    expect(created.body).toMatchObject({ syncStatus: 'syncing' })
    const id = created.body.id
    for (const polls of [2, 3]) {
      t.clock.advance(interval)
      await tick()
      expect(jobs()[0].pollTimes).toHaveLength(polls)
    }
    expect(await sourceOf(id)).toMatchObject({ syncStatus: 'success', errorMessage: null })
    expect(jobs()).toHaveLength(1)
    expect(jobs()[0].deleted).toBe(true)
    expect(await keys(id)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    expect((await runsOf(t, id)).at(-1)).toMatchObject({ status: 'success', rowsWritten: 3 })
  })

  it('a run resumed past its timeout fails without polling, deletes the job and applies nothing', async () => {
    fx.state.retryAfter = '3'
    fx.state.polls = 5
    const created = await createBulk({}, { timeout: 5_000 })
    const job = jobs()[0]
    t.clock.advance(60_000)
    expect(await tick()).toMatchObject({ recovered: 0, started: 1, failed: 1 })
    expect(await sourceOf(created.body.id)).toMatchObject({
      syncStatus: 'error',
      errorMessage: "The bulk export ran past the source's timeout (5000 ms) across the invocations of its sync",
    })
    expect(job.pollTimes).toHaveLength(1)
    expect(job.deleted).toBe(true)
    const [run] = await runsOf(t, created.body.id)
    expect(run).toMatchObject({ status: 'error' })
    expect(await checkpointOf(run.id)).toBeNull()
  })

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'a stopping service hands an export back without deleting the job; the next tick polls on when the server said',
    async () => {
      const node = await makeTestApp({ clock: t.clock })
      const bob = clientFor(node.app, 'tenant-a', 'bob')
      const panel = await createPanel(bob)
      fx.state.retryAfter = '2'
      const created = await createSource(
        bob,
        panel.id,
        { baseUrl: fx.baseUrl, mode: 'bulk', bulk: { level: 'system', since: 'auto' } },
        'fhir',
      )
      expect(created.body).toMatchObject({ syncStatus: 'success' })
      const started = await bob.post(`/api/datasources/${created.body.id}/sync?async=true`)
      expect(started.status).toBe(202)
      const job = await waitFor(async () => (jobs()[1]?.pollTimes.length ? jobs()[1] : undefined))
      await node.deps.settle({ until: Date.now() + 200 })
      const [run] = (await runsOf(node, created.body.id)).slice(-1)
      expect(run).toMatchObject({ status: 'syncing' })
      expect(await checkpointOf(run.id, node)).toContain(job.id)
      expect(job.deleted).toBe(false)

      // The next process on the same database: its tick resumes the run, at the poll time the server asked for.
      const next = await makeTestApp({ client: node.client as never, clock: t.clock })
      t.clock.advance(1)
      expect(await runMaintenanceTick(next.deps, t.clock.now())).toMatchObject({ recovered: 0, suspended: 1 })
      expect(job.pollTimes).toHaveLength(1)
      t.clock.advance(2_000)
      expect(await runMaintenanceTick(next.deps, t.clock.now())).toMatchObject({ recovered: 0, succeeded: 1 })
      expect(jobs()).toHaveLength(2)
      expect(job.pollTimes).toHaveLength(2)
      expect(job.deleted).toBe(true)
      expect((await runsOf(next, created.body.id)).at(-1)).toMatchObject({ id: run.id, status: 'success' })
    },
  )

  for (const [when, before] of [
    ['before its resume time', 0],
    ['once its lease ran to its resume time', 5_001],
  ] as const) {
    it(`a suspended run can be cancelled ${when}: it ends cancelled when it resumes, and the job is deleted`, async () => {
      fx.state.retryAfter = '5'
      const created = await createBulk()
      t.clock.advance(before)
      const cancel = await alice.post(`/api/datasources/${created.body.id}/sync/cancel`)
      expect(cancel.status).toBe(200)
      t.clock.advance(5_001 - before)
      expect(await tick()).toMatchObject({ recovered: 0, started: 1 })
      expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({ status: 'cancelled' })
      expect(jobs()[0].pollTimes).toHaveLength(1)
      expect(jobs()[0].deleted).toBe(true)
    })
  }
})
