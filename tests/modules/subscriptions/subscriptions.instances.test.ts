import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { sql } from 'drizzle-orm'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { Deps } from '../../../src/deps.ts'
import { makeTestApp, type TestApp, testClock } from '../../helpers/app.ts'
import { clientFor } from '../../helpers/http.ts'
import { type FixtureServer, sleep } from '../../helpers/servers.ts'
import { REMOTE } from '../../helpers/target.ts'
import { bodies, emit, sameDatabaseInstance, startReceiver, step } from './fixtures.ts'

/**
 * Several instances on one database, and restarts (docs/live.md "Outbound webhooks", "Several
 * instances"). In-process (node) each instance is an app of its own on one database file, with its
 * own libSQL connection; on workers and deno the database is the server's, and the second instance
 * is another set of deps in the test process reaching it over its own connection (D1 through
 * Miniflare, a libSQL client on Deno's file).
 */

const receivers: FixtureServer[] = []
const folders: string[] = []
const clock = testClock()

afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()))
})
afterAll(() => {
  for (const f of folders) rmSync(f, { recursive: true, force: true })
})

/** A database file two apps can open (node), or the server's database (workers, deno). */
function sharedFile() {
  const dir = mkdtempSync(join(tmpdir(), 'subs-'))
  folders.push(dir)
  return `file:${join(dir, 'panels.db')}`
}

/** The first instance, and a way to start another on the same database. */
async function firstInstance(): Promise<{ t: TestApp; another: () => Promise<Deps> }> {
  if (REMOTE) {
    const t = await makeTestApp({ clock })
    return { t, another: () => sameDatabaseInstance(t) }
  }
  const url = sharedFile()
  const t = await makeTestApp({ client: createClient({ url }), clock })
  return { t, another: async () => (await makeTestApp({ client: createClient({ url }), clock })).deps }
}

async function setUp(answer?: Parameters<typeof startReceiver>[0]) {
  const { t, another } = await firstInstance()
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  const r = await startReceiver(answer)
  receivers.push(r)
  const sub = await alice.post('/api/subscriptions', { url: `${r.url}/hook`, events: ['*'], panelId })
  expect(sub.status).toBe(201)
  const events = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ type: 'panel.rows_changed' as const, panelId, data: { n: i + 1 } }))
  return { t, another, r, events, subId: sub.body.id as number }
}

describe('several instances on one database', () => {
  it('never sends a delivery twice when two instances run the step at once', async () => {
    const { t, another, r, events } = await setUp()
    const other = await another()
    await emit(t.deps, 'tenant-a', events(30))
    const reports = await Promise.all([step(t.deps), step(other), step(t.deps), step(other)])
    expect(reports.reduce((n, x) => n + x.delivered, 0)).toBe(30)
    expect(bodies(r).map((b) => b.data.n)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
    expect(new Set(r.requests.map((q) => q.headers['x-delivery-id'])).size).toBe(30)
    await Promise.all([step(t.deps), step(other)])
    expect(r.requests).toHaveLength(30)
  })

  it('takes over a subscription whose runner died holding its lease once the lease expires', async () => {
    const { t, another, r, events, subId } = await setUp()
    const expires = new Date(t.clock.now().getTime() + 70_000).toISOString()
    await t.deps.db.run(
      sql`UPDATE subscriptions SET lease_token = 'dead-runner', lease_expires_at = ${expires} WHERE id = ${subId}`,
    )
    await emit(t.deps, 'tenant-a', events(2))
    const other = await another()
    expect((await step(other)).subscriptions).toBe(0)
    expect(r.requests).toHaveLength(0)
    t.clock.advance(70_001)
    expect((await step(other)).delivered).toBe(2)
    expect(bodies(r).map((b) => b.data.n)).toEqual([1, 2])
  })
})

describe('a restart', () => {
  it('sends what was pending in the database from a new instance', async () => {
    const { t, another, r, events } = await setUp((n) => (n === 1 ? 500 : 200))
    await emit(t.deps, 'tenant-a', events(2))
    expect((await step(t.deps)).retried).toBe(1)
    if (!REMOTE) await t.deps.close()
    const next = await another()
    t.clock.advance(10_000)
    expect((await step(next)).delivered).toBe(2)
    expect(bodies(r).map((b) => b.data.n)).toEqual([1, 1, 2])
    expect(r.requests[1].headers['x-delivery-attempt']).toBe('2')
    expect(r.requests[1].headers['x-delivery-id']).toBe(r.requests[0].headers['x-delivery-id'])
  })

  it('hands back an attempt in flight when the service stops; the next instance sends it again', async () => {
    const { t, another, r, events } = await setUp((n) => (n === 1 ? 'hang' : 200))
    await emit(t.deps, 'tenant-a', events(1))
    t.deps.defer(step(t.deps), { what: 'delivery step' })
    for (let waited = 0; r.requests.length === 0 && waited < 5_000; waited += 10) await sleep(10)
    expect(r.requests).toHaveLength(1)
    // A stop with little time left aborts the attempt (WEBHOOK_TIMEOUT_MS is 10 s here).
    const stop = { until: Date.now() + 1_500 }
    await (REMOTE ? t.deps.settle(stop) : t.deps.close(stop))
    const next = await another()
    const [pending] = await next.db.all<{ status: string; attempts: number; lease_token: string | null }>(
      sql`SELECT d.status, d.attempts, s.lease_token FROM subscription_deliveries d JOIN subscriptions s ON s.id = d.subscription_id`,
    )
    expect(pending).toEqual({ status: 'pending', attempts: 0, lease_token: null })
    expect((await step(next)).delivered).toBe(1)
    expect(r.requests).toHaveLength(2)
    expect(r.requests.map((q) => q.headers['x-delivery-attempt'])).toEqual(['1', '1'])
    expect(r.requests[1].headers['x-delivery-id']).toBe(r.requests[0].headers['x-delivery-id'])
  })

  it('sends events committed while no instance ran, once one starts', async () => {
    const { t, another, r, events } = await setUp()
    if (!REMOTE) await t.deps.close()
    const next = await another()
    await emit(next, 'tenant-a', events(3))
    await step(next)
    expect(bodies(r).map((b) => b.data.n)).toEqual([1, 2, 3])
  })
})
