import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Deps } from '../../../src/deps.ts'
import { runTimeStep } from '../../../src/modules/work/work.time.ts'
import { refreshWorkStatement } from '../../../src/rowstore/work-sql.ts'
import { startScheduler } from '../../../src/runtime/scheduler-loop.ts'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, type TestApp, testClock } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { REMOTE } from '../../helpers/target.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'
import { sameDatabaseInstance } from '../subscriptions/fixtures.ts'

/**
 * Time moves rows (WORKLIST.md §2 "Time moves rows", §5; docs/worklist.md "Time rules"): reads
 * compute `_overdue`, `_snoozed` and an expired claim against now; the scheduler step frees expired
 * claims (cause `lease_expired`), appends exactly one `row.overdue` per row and dueAt, applies ended
 * snoozes, and moves the views that show or filter on them — once, whoever runs it.
 */

interface FeedEvent {
  seq: number
  type: string
  view_id: number | null
  data: Record<string, unknown>
}

async function eventsOf(deps: Deps, tenantId: string, after = 0): Promise<FeedEvent[]> {
  const rows = await deps.db.all<Omit<FeedEvent, 'data'> & { data: string }>(
    sql`SELECT seq, type, view_id, data FROM events WHERE tenant_id = ${tenantId} AND seq > ${after} ORDER BY seq`,
  )
  return rows.map((r) => ({
    ...r,
    seq: Number(r.seq),
    view_id: r.view_id === null ? null : Number(r.view_id),
    data: JSON.parse(r.data),
  }))
}

const HOUR = 3_600_000

let w: RowsWorld
let overdueView: number
let awakeView: number
let shownView: number
const row = (id: number) => `/api/panels/${w.panelId}/rows/${id}`
const events = (after = 0) => eventsOf(w.t.deps, 'tenant-a', after)
const lastSeq = async () => (await events()).at(-1)?.seq ?? 0
const later = (ms: number) => new Date(w.t.clock.now().getTime() + ms).toISOString()
const viewRows = async (viewId: number) =>
  (await w.alice.get(`/api/views/${viewId}/rows?limit=100`)).body.data as Record<string, unknown>[]
const step = () => runMaintenanceTick(w.t.deps, w.t.clock.now())

beforeAll(async () => {
  w = await rowsWorld()
  const create = async (body: Record<string, unknown>) => {
    const res = await w.alice.post('/api/views', { panelId: w.panelId, ...body })
    if (res.status !== 201) throw new Error(JSON.stringify(res.body))
    return res.body.id as number
  }
  overdueView = await create({
    name: 'Overdue',
    filters: [{ columnTitle: '_overdue', operator: 'equals', value: true }],
    config: { columns: ['Name', '_dueAt'] },
  })
  awakeView = await create({
    name: 'Awake',
    filters: [{ columnTitle: '_snoozed', operator: 'equals', value: false }],
    config: { columns: ['Name'] },
  })
  shownView = await create({ name: 'Work', config: { columns: ['Name', '_assignee', '_overdue', '_snoozed'] } })
})
afterAll(() => w.server.close())

describe('reads are never stale', () => {
  it('a row whose dueAt passed reads _overdue: true before any scheduler step; an expired claim reads as free', async () => {
    expect((await w.alice.patch(`${row(w.ids.p1)}/work`, { dueAt: later(HOUR) })).status).toBe(200)
    expect((await w.alice.post(`${row(w.ids.p3)}/claim`, { leaseSeconds: 60 })).status).toBe(200)
    const shown = async (key: string) => (await viewRows(shownView)).find((r) => r._key === key)
    expect(await shown('p1')).toMatchObject({ _overdue: false })
    expect(await shown('p3')).toMatchObject({ _assignee: 'alice' })
    expect((await viewRows(overdueView)).map((r) => r._key)).toEqual([])
    w.t.clock.advance(2 * HOUR)
    // No step has run: the reads compute against now.
    expect(await shown('p1')).toMatchObject({ _overdue: true })
    expect(await shown('p3')).toMatchObject({ _assignee: null })
    expect((await viewRows(overdueView)).map((r) => r._key)).toEqual(['p1'])
    const filtered = await w.alice.get(
      `/api/panels/${w.panelId}/rows?filters=${encodeURIComponent(JSON.stringify([{ columnTitle: '_overdue', operator: 'equals', value: true }]))}`,
    )
    expect(filtered.status, JSON.stringify(filtered.body)).toBe(200)
    expect(filtered.body.data.map((r: { _key: string }) => r._key)).toEqual(['p1'])
  })
})

describe('the scheduler step', () => {
  it('appends one row.overdue, frees the expired claim (lease_expired) and moves the views, once', async () => {
    const before = await lastSeq()
    const report = await step()
    expect(report.time).toMatchObject({ freed: 1, overdue: 1, woken: 0 })
    const log = await events(before)
    const overdue = log.filter((e) => e.type === 'row.overdue')
    expect(overdue).toHaveLength(1)
    expect(overdue[0].data).toMatchObject({ rowId: w.ids.p1, key: 'p1', panelId: w.panelId, dueAt: expect.any(String) })
    expect((overdue[0].data.work as Record<string, unknown>).dueAt).toBe(overdue[0].data.dueAt)
    const freed = log.filter((e) => e.type === 'row.work_updated')
    expect(freed).toHaveLength(1)
    expect(freed[0].data).toMatchObject({
      rowId: w.ids.p3,
      cause: 'lease_expired',
      by: 'system',
      changed: { assignee: { from: 'alice', to: null } },
      work: { assignee: null, claimExpiresAt: null, claimedAt: null, version: 2 },
    })
    // The views that filter on or show the columns moved: p1 entered "Overdue", "Work" shows the new values.
    const moves = log.filter((e) => e.type.startsWith('row.') && e.view_id !== null).map((e) => [e.view_id, e.type, e.data.key])
    expect(moves).toEqual(
      expect.arrayContaining([
        [overdueView, 'row.entered', 'p1'],
        [shownView, 'row.updated', 'p1'],
        [shownView, 'row.updated', 'p3'],
      ]),
    )
    expect(moves).toHaveLength(3)
    const change = await w.t.client.execute({
      sql: "SELECT user_id, changes FROM changes WHERE entity_type = 'row' AND entity_id = ? ORDER BY id DESC LIMIT 1",
      args: [w.ids.p3],
    })
    expect(change.rows[0].user_id).toBe('system')
    expect(JSON.parse(String(change.rows[0].changes))).toMatchObject({ assignee: { oldValue: 'alice', newValue: null } })
    // The row.overdue is no work change: p1's version is the PATCH's.
    expect((await w.alice.get(row(w.ids.p1))).body._work).toMatchObject({ version: 1 })
    // Nothing is due any more: a second step appends nothing.
    const again = await lastSeq()
    expect((await step()).time).toMatchObject({ panels: 0, freed: 0, overdue: 0, woken: 0 })
    expect(await events(again)).toEqual([])
  })

  it('a new dueAt is owed its own row.overdue; a done row none until it is reopened', async () => {
    expect((await w.alice.patch(`${row(w.ids.p1)}/work`, { dueAt: later(HOUR) })).status).toBe(200)
    expect((await w.alice.patch(`${row(w.ids.p2)}/work`, { dueAt: later(HOUR), status: 'done' })).status).toBe(200)
    w.t.clock.advance(2 * HOUR)
    const before = await lastSeq()
    expect((await step()).time).toMatchObject({ overdue: 1 })
    const overdue = (await events(before)).filter((e) => e.type === 'row.overdue')
    expect(overdue.map((e) => e.data.key)).toEqual(['p1'])
    expect((await w.alice.patch(`${row(w.ids.p2)}/work`, { status: 'open' })).status).toBe(200)
    const reopened = await lastSeq()
    expect((await step()).time).toMatchObject({ overdue: 1 })
    expect((await events(reopened)).filter((e) => e.type === 'row.overdue').map((e) => e.data.key)).toEqual(['p2'])
    expect((await step()).time.overdue).toBe(0)
  })

  it('applies an ended snooze: views that exclude snoozed rows get row.entered; no work change', async () => {
    const snoozed = await w.alice.patch(`${row(w.ids.p4)}/work`, { snoozedUntil: later(HOUR) })
    expect(snoozed.status).toBe(200)
    const version = snoozed.body._work.version
    expect((await viewRows(awakeView)).map((r) => r._key)).not.toContain('p4')
    w.t.clock.advance(HOUR)
    const before = await lastSeq()
    expect((await step()).time).toMatchObject({ woken: 1, freed: 0, overdue: 0 })
    const log = await events(before)
    expect(log.filter((e) => e.type === 'row.work_updated')).toEqual([])
    expect(log.filter((e) => e.view_id === awakeView).map((e) => [e.type, e.data.key])).toEqual([['row.entered', 'p4']])
    expect(log.filter((e) => e.view_id === shownView).map((e) => [e.type, e.data.key])).toEqual([['row.updated', 'p4']])
    expect((await w.alice.get(row(w.ids.p4))).body._work.version).toBe(version)
    const members = await w.t.client.execute({
      sql: 'SELECT count(*) AS n FROM view_members WHERE view_id = ? AND key = ?',
      args: [awakeView, 'p4'],
    })
    expect(Number(members.rows[0].n)).toBe(1)
    expect((await step()).time.woken).toBe(0)
  })

  it('acts at the first step after dueAt, never before it', async () => {
    const due = later(30_000)
    expect((await w.alice.patch(`${row(w.ids.p5)}/work`, { dueAt: due })).status).toBe(200)
    expect((await step()).time.overdue).toBe(0)
    w.t.clock.advance(30_001)
    expect((await step()).time.overdue).toBe(1)
  })
})

describe('never twice across instances', () => {
  /** A panel of `rows` rows on its own app, each overdue and each claimed with an expired lease. */
  async function dueWorld(deps: Deps, app: TestClient, url: string, rows: number) {
    const panelId = (await app.post('/api/panels', { name: 'Race', tenantId: 'tenant-r', userId: 'rita' })).body.id as number
    const source = await app.post(`/api/panels/${panelId}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${url}/race`, keyField: 'id' },
    })
    expect(source.status, JSON.stringify(source.body)).toBe(201)
    const now = deps.clock.now().getTime()
    await deps.db.run(sql`UPDATE row_identities SET due_at = ${new Date(now + 60_000).toISOString()},
      assignee = 'rita', claimed_at = ${new Date(now).toISOString()}, claim_expires_at = ${new Date(now + 60_000).toISOString()},
      snoozed_until = ${new Date(now + 60_000).toISOString()}, version = 1 WHERE panel_id = ${panelId}`)
    await deps.db.run(refreshWorkStatement(sql`SELECT id FROM row_identities WHERE panel_id = ${panelId}`))
    const count = await deps.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM row_identities WHERE panel_id = ${panelId}`)
    expect(Number(count[0].n)).toBe(rows)
  }

  let server: FixtureServer
  const folders: string[] = []
  beforeAll(async () => {
    server = await startJsonServer((_req, res) =>
      sendJson(
        res,
        200,
        Array.from({ length: 40 }, (_, i) => ({ id: `r${i}`, name: `Row ${i}` })),
      ),
    )
  })
  afterAll(async () => {
    await server.close()
    for (const f of folders) rmSync(f, { recursive: true, force: true })
  })

  const expectOnce = async (deps: Deps, reports: { freed: number; overdue: number; woken: number }[]) => {
    const sum = (k: 'freed' | 'overdue' | 'woken') => reports.reduce((n, r) => n + r[k], 0)
    expect([sum('freed'), sum('overdue'), sum('woken')]).toEqual([40, 40, 40])
    const log = await eventsOf(deps, 'tenant-r')
    const overdue = log.filter((e) => e.type === 'row.overdue').map((e) => e.data.rowId)
    expect(overdue).toHaveLength(40)
    expect(new Set(overdue).size).toBe(40)
    const freed = log.filter((e) => e.type === 'row.work_updated' && e.data.cause === 'lease_expired')
    expect(freed).toHaveLength(40)
    const versions = await deps.db.all<{ v: number }>(
      sql`SELECT DISTINCT version AS v FROM row_identities WHERE tenant_id = 'tenant-r'`,
    )
    expect(versions.map((v) => Number(v.v))).toEqual([2])
  }

  it('two steps racing on one database emit each row.overdue and free each claim once', async () => {
    const clock = testClock()
    const t = await makeTestApp({ clock })
    await dueWorld(t.deps, clientFor(t.app, 'tenant-r', 'rita'), server.url, 40)
    clock.advance(61_000)
    const reports = await Promise.all([runTimeStep(t.deps), runTimeStep(t.deps), runTimeStep(t.deps)])
    await expectOnce(t.deps, reports)
  })

  // In-process each instance is an app of its own on one database file with its own libSQL
  // connection; on workers and deno the second is another set of deps reaching the server's database.
  it('two app instances on one database, stepping at once, do it once', async () => {
    const clock = testClock()
    let one: TestApp
    let two: Deps
    if (REMOTE) {
      one = await makeTestApp({ clock })
      two = await sameDatabaseInstance(one)
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'time-'))
      folders.push(dir)
      const url = `file:${join(dir, 'panels.db')}`
      one = await makeTestApp({ client: createClient({ url }), clock })
      two = (await makeTestApp({ client: createClient({ url }), clock })).deps
    }
    await dueWorld(one.deps, clientFor(one.app, 'tenant-r', 'rita'), server.url, 40)
    clock.advance(61_000)
    const reports = await Promise.all([runTimeStep(one.deps), runTimeStep(two), runTimeStep(one.deps), runTimeStep(two)])
    await expectOnce(one.deps, reports)
    if (!REMOTE) await Promise.all([one.deps.close(), two.close()])
  })
})

describe('the interval loop (Node, Deno)', () => {
  const until = async (what: string, check: () => Promise<boolean> | boolean) => {
    for (let i = 0; i < 200; i++) {
      if (await check()) return
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error(`timed out waiting for ${what}`)
  }

  it('runs the time step at every interval, also while a long sync still holds the step', async () => {
    let hang = false
    let release = () => {}
    const source = await startJsonServer(async (_req, res) => {
      if (hang) await new Promise<void>((resolve) => (release = resolve))
      sendJson(res, 200, [{ id: 'a', name: 'Ada' }])
    })
    const clock = testClock()
    const t = await makeTestApp({ clock, env: { SYNC_INTERVAL_SECONDS: '5' } })
    const rita = clientFor(t.app, 'tenant-l', 'rita')
    const panelId = (await rita.post('/api/panels', { name: 'Loop', tenantId: 'tenant-l', userId: 'rita' })).body.id
    const created = await rita.post(`/api/panels/${panelId}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${source.url}/slow`, keyField: 'id' },
    })
    expect(created.status).toBe(201)
    const [{ id: rowId }] = await t.deps.db.all<{ id: number }>(sql`SELECT id FROM row_identities WHERE panel_id = ${panelId}`)
    const dueAt = new Date(clock.now().getTime() + 60_000).toISOString()
    expect((await rita.patch(`/api/panels/${panelId}/rows/${rowId}/work`, { dueAt })).status).toBe(200)
    // The source is due: the loop's next step starts its sync, which hangs.
    hang = true
    await t.deps.db.run(sql`UPDATE data_sources SET next_sync_at = ${clock.now().toISOString()} WHERE id = ${created.body.id}`)
    const overdue = async () => (await eventsOf(t.deps, 'tenant-l')).some((e) => e.type === 'row.overdue')
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    const loop = startScheduler(t.deps)
    try {
      vi.advanceTimersByTime(5_000)
      await until('the sync to start', () => source.requests.length === 2)
      clock.advance(61_000)
      vi.advanceTimersByTime(5_000)
      await until('the row.overdue of the next interval', overdue)
    } finally {
      loop.stop()
      vi.useRealTimers()
      release()
      await t.deps.settle()
      await source.close()
    }
  })
})
