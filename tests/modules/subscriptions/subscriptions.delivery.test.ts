import { sql } from 'drizzle-orm'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { verifySignature } from '../../../src/modules/datasources/datasources.webhooks.parse.ts'
import { BACKOFF_MS, MAX_ATTEMPTS } from '../../../src/modules/subscriptions/subscriptions.queue.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sleep, startJsonServer } from '../../helpers/servers.ts'
import { importRows } from '../rows/import.fixtures.ts'
import { bodies, emit, expectedSignature, startReceiver, step } from './fixtures.ts'

/**
 * Deliveries (docs/live.md "Outbound webhooks"), driven by the delivery step on the test clock
 * against real receivers on 127.0.0.1. WEBHOOK_TIMEOUT_MS is short so a hanging receiver costs
 * 300 ms, and WEBHOOK_DISABLE_AFTER is 2 so disabling takes two exhausted deliveries.
 */

let t: TestApp
let alice: TestClient
let bob: TestClient
let alicePanel: number
const receivers: FixtureServer[] = []

beforeAll(async () => {
  t = await makeTestApp({ env: { WEBHOOK_TIMEOUT_MS: '300', WEBHOOK_DISABLE_AFTER: '2' } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  alicePanel = (await alice.post('/api/panels', { name: 'Ward A', tenantId: 'tenant-a', userId: 'alice' })).body.id
})
// Each test's subscriptions end with it, so the next test's steps serve only its own.
afterEach(async () => {
  for (const s of (await alice.get('/api/subscriptions')).body.subscriptions) await alice.delete(`/api/subscriptions/${s.id}`)
})
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
})

async function receiver(answer?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(answer)
  receivers.push(r)
  return r
}

/** A subscription of alice's to `r`, narrowed to her panel unless `body` says otherwise. */
async function subscribe(r: FixtureServer, body: Record<string, unknown> = {}) {
  const res = await alice.post('/api/subscriptions', { url: `${r.url}/hook`, events: ['*'], panelId: alicePanel, ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body as { id: number; secret: string }
}

const rowsChanged = (n: number) => ({ type: 'panel.rows_changed' as const, panelId: alicePanel, data: { inserted: n } })
const deliveriesOf = async (id: number) => (await alice.get(`/api/subscriptions/${id}/deliveries`)).body
const subscription = async (id: number) => (await alice.get(`/api/subscriptions/${id}`)).body

describe('a delivery', () => {
  it('POSTs the event JSON, signed with the secret, with the event and delivery headers', async () => {
    const r = await receiver()
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [{ ...rowsChanged(3), dataSourceId: 7 }], '2026-01-01T12:00:00.000Z')
    expect((await step(t.deps)).delivered).toBe(1)
    expect(r.requests).toHaveLength(1)
    const [req] = r.requests
    const event = JSON.parse(req.body)
    expect(event).toEqual({
      id: String(event.seq),
      seq: event.seq,
      type: 'panel.rows_changed',
      tenantId: 'tenant-a',
      occurredAt: '2026-01-01T12:00:00.000Z',
      panelId: alicePanel,
      dataSourceId: 7,
      data: { inserted: 3 },
    })
    expect(req.method).toBe('POST')
    expect(req.url).toBe('/hook')
    expect(req.headers['content-type']).toBe('application/json')
    expect(req.headers['x-event-id']).toBe(String(event.seq))
    expect(req.headers['x-event-type']).toBe('panel.rows_changed')
    expect(req.headers['x-delivery-id']).toMatch(/^[0-9a-f-]{36}$/)
    expect(req.headers['x-delivery-attempt']).toBe('1')
    expect(req.headers['x-signature-256']).toBe(expectedSignature(sub.secret, req.body))
    // The inbound webhook's own check accepts it: the same scheme both ways.
    await expect(
      verifySignature(sub.secret, req.headers['x-signature-256'] as string, new TextEncoder().encode(req.body)),
    ).resolves.toBeUndefined()
    const page = await deliveriesOf(sub.id)
    expect(page).toMatchObject({ total: 1, hasMore: false })
    expect(page.deliveries[0]).toMatchObject({
      deliveryId: req.headers['x-delivery-id'],
      eventSeq: event.seq,
      eventType: 'panel.rows_changed',
      status: 'delivered',
      attempts: 1,
      statusCode: 200,
      error: null,
      nextAttemptAt: null,
    })
    expect(typeof page.deliveries[0].durationMs).toBe('number')
    // Acknowledged: never sent again.
    t.clock.advance(24 * 3_600_000)
    await step(t.deps)
    expect(r.requests).toHaveLength(1)
  })

  it('carries only the events of its types, panel and view', async () => {
    const r = await receiver()
    const view = await alice.post('/api/views', { name: 'Mine', panelId: alicePanel })
    const other = await alice.post('/api/views', { name: 'Other', panelId: alicePanel })
    await subscribe(r, { events: ['row.entered', 'view.updated'], viewId: view.body.id })
    await emit(t.deps, 'tenant-a', [
      { type: 'row.entered', panelId: alicePanel, viewId: view.body.id, data: { n: 1 } },
      { type: 'row.left', panelId: alicePanel, viewId: view.body.id, data: { n: 2 } },
      { type: 'row.entered', panelId: alicePanel, viewId: other.body.id, data: { n: 3 } },
      { type: 'view.updated', panelId: alicePanel, viewId: view.body.id, data: { n: 4 } },
      rowsChanged(5),
    ])
    await step(t.deps)
    expect(bodies(r).map((b) => b.data.n)).toEqual([1, 4])
  })
})

describe('the kick after a commit', () => {
  // Node and Deno: the process's watch of subscribed tenants; Workers: the pass after the
  // request's commits, kept alive by its waitUntil. The test runs no step and no cron.
  it('delivers the events of a write through the API within seconds, without a step', async () => {
    const r = await receiver()
    await alice.post(`/api/panels/${alicePanel}/columns/base`, { name: 'Name', sourceField: 'name' })
    const view = (await alice.post('/api/views', { name: 'Everyone', panelId: alicePanel })).body.id
    await subscribe(r, { events: ['row.entered'], viewId: view })
    const mapping = [{ sourceField: 'name', targetColumn: 'Name' }]
    const imported = await importRows(t, alicePanel, { format: 'json', mapping }, [{ name: 'Ada' }, { name: 'Grace' }])
    expect(imported.body.rowsImported).toBe(2)
    for (let waited = 0; r.requests.length < 2 && waited < 5_000; waited += 20) await sleep(20)
    expect(bodies(r).map((b) => [b.type, b.viewId])).toEqual([
      ['row.entered', view],
      ['row.entered', view],
    ])
    // Sent once: the queue holds nothing more for a step to send.
    expect((await step(t.deps)).delivered).toBe(0)
    expect(r.requests).toHaveLength(2)
  })
})

describe('order and retries', () => {
  it('keeps later events behind a delivery that is being retried, in seq order', async () => {
    const r = await receiver((n) => (n === 1 ? 503 : 200))
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [rowsChanged(1), rowsChanged(2)])
    const first = await step(t.deps)
    expect(first).toMatchObject({ delivered: 0, retried: 1 })
    expect(r.requests).toHaveLength(1)
    await step(t.deps)
    expect(r.requests).toHaveLength(1)
    const pending = (await deliveriesOf(sub.id)).deliveries
    expect(pending.map((d: { status: string }) => d.status)).toEqual(['pending', 'pending'])
    expect(pending[1]).toMatchObject({ attempts: 1, statusCode: 503, error: 'HTTP 503' })
    expect(pending[1].nextAttemptAt).toBe(new Date(t.clock.now().getTime() + 10_000).toISOString())
    t.clock.advance(10_000)
    await step(t.deps)
    expect(bodies(r).map((b) => b.data.inserted)).toEqual([1, 1, 2])
    expect(r.requests.map((q) => q.headers['x-delivery-attempt'])).toEqual(['1', '2', '1'])
    expect(r.requests[0].headers['x-delivery-id']).toBe(r.requests[1].headers['x-delivery-id'])
    expect(r.requests[2].headers['x-delivery-id']).not.toBe(r.requests[0].headers['x-delivery-id'])
  })

  it('backs off 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, then fails the delivery and moves on', async () => {
    const r = await receiver(() => 500)
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [rowsChanged(1), rowsChanged(2)])
    await step(t.deps)
    expect(r.requests).toHaveLength(1)
    expect(BACKOFF_MS).toEqual([10_000, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000])
    for (const [i, wait] of BACKOFF_MS.entries()) {
      const before = r.requests.length
      t.clock.advance(wait - 1)
      await step(t.deps)
      expect(r.requests.length, `1 ms before ${wait} ms`).toBe(before)
      t.clock.advance(1)
      await step(t.deps)
      // The last attempt fails event 1 for good, and event 2 goes out right behind it.
      expect(r.requests.length, `after ${wait} ms`).toBe(before + (i === BACKOFF_MS.length - 1 ? 2 : 1))
    }
    // Seven attempts of event 1, then event 2's first attempt in the same step.
    expect(bodies(r).map((b) => b.data.inserted)).toEqual([1, 1, 1, 1, 1, 1, 1, 2])
    const [second, first] = (await deliveriesOf(sub.id)).deliveries
    expect(first).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS, statusCode: 500, nextAttemptAt: null })
    expect(second).toMatchObject({ status: 'pending', attempts: 1 })
    // Every attempt is kept, oldest first, at the times the backoff gave.
    expect(first.attemptsLog.map((a: { attempt: number; statusCode: number }) => [a.attempt, a.statusCode])).toEqual(
      Array.from({ length: MAX_ATTEMPTS }, (_, i) => [i + 1, 500]),
    )
    const times = first.attemptsLog.map((a: { at: string }) => Date.parse(a.at))
    expect(times.slice(1).map((at: number, i: number) => at - times[i])).toEqual(BACKOFF_MS)
    expect((await subscription(sub.id)).consecutiveFailures).toBe(1)
  })

  it('counts a time-out as a failed attempt', async () => {
    const r = await receiver(() => 'hang')
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [rowsChanged(1)])
    const started = Date.now()
    expect((await step(t.deps)).retried).toBe(1)
    expect(Date.now() - started).toBeLessThan(5_000)
    const [d] = (await deliveriesOf(sub.id)).deliveries
    expect(d).toMatchObject({ status: 'pending', attempts: 1, statusCode: null, error: 'Timed out after 300 ms' })
  })

  it('disables the subscription after WEBHOOK_DISABLE_AFTER failed deliveries in a row, until re-enabled', async () => {
    const r = await receiver(() => 500)
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [rowsChanged(1), rowsChanged(2), rowsChanged(3)])
    for (let i = 0; i < 2 * MAX_ATTEMPTS; i++) {
      await step(t.deps)
      t.clock.advance(6 * 3_600_000)
    }
    const disabled = await subscription(sub.id)
    expect(disabled).toMatchObject({ active: false, consecutiveFailures: 2 })
    expect(disabled.disabledReason).toBe('Disabled after 2 consecutive failed deliveries; the last: HTTP 500')
    expect(r.requests).toHaveLength(2 * MAX_ATTEMPTS)
    await step(t.deps)
    expect(r.requests).toHaveLength(2 * MAX_ATTEMPTS)
    const enabled = await alice.put(`/api/subscriptions/${sub.id}`, { active: true })
    expect(enabled.body).toMatchObject({ active: true, disabledReason: null, consecutiveFailures: 0 })
    await step(t.deps)
    expect(bodies(r).at(-1).data.inserted).toBe(3)
  })
})

describe('changes while a queue is served', () => {
  it('stops at once when the subscription is deactivated during a step, and sends a new url the retries', async () => {
    let subId = 0
    const r = await startJsonServer(async (_req, res) => {
      if (r.requests.length === 1) expect((await alice.put(`/api/subscriptions/${subId}`, { active: false })).status).toBe(200)
      res.writeHead(r.requests.length === 1 ? 200 : 500)
      res.end()
    })
    receivers.push(r)
    subId = (await subscribe(r)).id
    await emit(t.deps, 'tenant-a', [rowsChanged(1), rowsChanged(2)])
    await step(t.deps)
    expect(bodies(r).map((b) => b.data.inserted)).toEqual([1])
    const moved = await receiver()
    await alice.put(`/api/subscriptions/${subId}`, { active: true, url: `${moved.url}/new` })
    await step(t.deps)
    expect(bodies(moved).map((b) => b.data.inserted)).toEqual([2])
    expect(moved.requests[0].url).toBe('/new')
  })
})

describe('what a subscription may receive', () => {
  it('never delivers events its owner may not read', async () => {
    const r = await receiver()
    const bobPanel = (await bob.post('/api/panels', { name: 'Ward B', tenantId: 'tenant-a', userId: 'bob' })).body.id
    const hidden = (await bob.post('/api/views', { name: 'Private', panelId: bobPanel })).body.id
    const shared = (await bob.post('/api/views', { name: 'Shared', panelId: bobPanel })).body.id
    expect((await bob.post(`/api/views/${shared}/publish`, {})).status).toBe(200)
    const grouped = (await bob.post('/api/views', { name: 'Nurses', panelId: bobPanel })).body.id
    await bob.post(`/api/views/${grouped}/publish`, { publishConfig: { userGroups: ['nurses'] } })
    const own = (await alice.post('/api/views', { name: 'Own', panelId: alicePanel })).body.id
    await subscribe(r, { panelId: null })
    await emit(t.deps, 'tenant-a', [
      { type: 'panel.rows_changed', panelId: bobPanel, data: { n: 'bob panel' } },
      { type: 'row.entered', panelId: bobPanel, viewId: hidden, data: { n: 'bob private view' } },
      { type: 'row.entered', panelId: bobPanel, viewId: grouped, data: { n: 'group view' } },
      { type: 'row.entered', panelId: bobPanel, viewId: shared, data: { n: 'published view' } },
      { type: 'row.entered', panelId: alicePanel, viewId: own, data: { n: 'own view' } },
      { type: 'panel.rows_changed', panelId: alicePanel, data: { n: 'own panel' } },
      { type: 'view.updated', data: { n: 'no panel or view' } },
    ])
    await emit(t.deps, 'tenant-b', [{ type: 'panel.rows_changed', panelId: alicePanel, data: { n: 'other tenant' } }])
    await step(t.deps)
    expect(bodies(r).map((b) => b.data.n)).toEqual(['published view', 'own view', 'own panel'])
  })

  it('checks again when it sends: a view unpublished while its event waited is passed over', async () => {
    const r = await receiver((n) => (n === 1 ? 500 : 200))
    const bobPanel = (await bob.post('/api/panels', { name: 'Ward B2', tenantId: 'tenant-a', userId: 'bob' })).body.id
    const shared = (await bob.post('/api/views', { name: 'Shared', panelId: bobPanel })).body.id
    await bob.post(`/api/views/${shared}/publish`, {})
    const sub = await subscribe(r, { panelId: null, viewId: shared })
    await emit(t.deps, 'tenant-a', [{ type: 'row.entered', panelId: bobPanel, viewId: shared, data: {} }])
    await step(t.deps)
    expect(r.requests).toHaveLength(1)
    expect((await bob.post(`/api/views/${shared}/unpublish`, {})).status).toBe(200)
    t.clock.advance(10_000)
    await step(t.deps)
    expect(r.requests).toHaveLength(1)
    const [d] = (await deliveriesOf(sub.id)).deliveries
    expect(d).toMatchObject({ status: 'skipped', error: 'The owner may no longer read this event', attempts: 1 })
    expect((await subscription(sub.id)).consecutiveFailures).toBe(0)
  })

  it('sends one events.expired notice for events pruned before its queue took them', async () => {
    const r = await receiver()
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [rowsChanged(1), rowsChanged(2), rowsChanged(3)])
    const [{ seq }] = await t.deps.db.all<{ seq: number }>(sql`SELECT max(seq) AS seq FROM events WHERE tenant_id = 'tenant-a'`)
    await t.deps.db.run(sql`DELETE FROM events WHERE tenant_id = 'tenant-a' AND seq < ${seq}`)
    await step(t.deps)
    const [notice, event] = bodies(r)
    expect(notice).toMatchObject({ type: 'events.expired', data: { subscriptionId: sub.id, fromSeq: seq - 2, toSeq: seq - 1 } })
    expect(r.requests[0].headers['x-event-type']).toBe('events.expired')
    expect(r.requests[0].headers['x-signature-256']).toBe(expectedSignature(sub.secret, r.requests[0].body))
    expect(event).toMatchObject({ seq, data: { inserted: 3 } })
  })
})

describe('POST /api/subscriptions/{id}/test', () => {
  it('sends a signed ping at once and answers the attempt, outside the queue', async () => {
    const r = await receiver((n) => (n === 1 ? 500 : 200))
    const sub = await subscribe(r)
    await emit(t.deps, 'tenant-a', [rowsChanged(1)])
    await step(t.deps)
    expect(r.requests).toHaveLength(1)
    const ping = await alice.post(`/api/subscriptions/${sub.id}/test`)
    expect(ping.status, JSON.stringify(ping.body)).toBe(200)
    expect(ping.body).toMatchObject({ eventType: 'ping', eventSeq: null, status: 'delivered', attempts: 1, statusCode: 200 })
    expect(r.requests).toHaveLength(2)
    const [, req] = r.requests
    expect(JSON.parse(req.body)).toMatchObject({ type: 'ping', tenantId: 'tenant-a', data: { subscriptionId: sub.id } })
    expect(req.headers['x-event-type']).toBe('ping')
    expect(req.headers['x-delivery-id']).toBe(ping.body.deliveryId)
    expect(req.headers['x-signature-256']).toBe(expectedSignature(sub.secret, req.body))
    // The queue's head still waits for its retry.
    const page = await deliveriesOf(sub.id)
    expect(page.deliveries.map((d: { eventType: string; status: string }) => [d.eventType, d.status])).toEqual([
      ['ping', 'delivered'],
      ['panel.rows_changed', 'pending'],
    ])
  })

  it('answers a failed ping without counting it toward disabling', async () => {
    const r = await receiver(() => 404)
    const sub = await subscribe(r)
    const ping = await alice.post(`/api/subscriptions/${sub.id}/test`)
    expect(ping.status).toBe(200)
    expect(ping.body).toMatchObject({ status: 'failed', statusCode: 404, error: 'HTTP 404' })
    expect((await subscription(sub.id)).consecutiveFailures).toBe(0)
  })

  it('answers an unreachable endpoint with the error', async () => {
    const r = await receiver()
    await r.close()
    const sub = await subscribe(r)
    const ping = await alice.post(`/api/subscriptions/${sub.id}/test`)
    expect(ping.status).toBe(200)
    expect(ping.body).toMatchObject({ status: 'failed', statusCode: null })
    expect(ping.body.error).toBeTruthy()
  })
})
