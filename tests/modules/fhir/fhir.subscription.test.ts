import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { checkNotification, type ReadNotification } from '../../helpers/fhir-notification.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sleep } from '../../helpers/servers.ts'
import { importRows } from '../rows/import.fixtures.ts'
import { emit, expectedSignature, sameDatabaseInstance, startReceiver, step } from '../subscriptions/fixtures.ts'

/**
 * View membership as a Subscriptions-backport topic (docs/fhir.md "View membership as a topic"):
 * POST /fhir/Subscription, the handshake, one notification per row.entered/left/updated of the
 * view through the outbound webhook queue, $status, $events, heartbeats, the end of a deleted
 * view, and tenant isolation. Receivers are real HTTP servers on 127.0.0.1; every notification they
 * get goes through the IG-shape check (tests/helpers/fhir-notification.ts).
 */

const BASE = 'https://panels.example.org/fhir'
const TOPIC = `${BASE}/SubscriptionTopic/view-membership`
const IG = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition'
const FHIR = { 'Content-Type': 'application/fhir+json' }

let t: TestApp
let alice: TestClient
let bob: TestClient
let eve: TestClient
let panelId: number
let viewId: number
const receivers: FixtureServer[] = []

beforeAll(async () => {
  t = await makeTestApp({ env: { PUBLIC_BASE_URL: 'https://panels.example.org', WEBHOOK_TIMEOUT_MS: '3000' } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  eve = clientFor(t.app, 'tenant-b', 'eve')
  panelId = (await alice.post('/api/panels', { name: 'Diabetes', tenantId: 'tenant-a', userId: 'alice' })).body.id
  for (const name of ['Name', 'Patient']) {
    const res = await alice.post(`/api/panels/${panelId}/columns/base`, { name, sourceField: name.toLowerCase() })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  }
  const workflow = await alice.get(`/api/panels/${panelId}/workflow`)
  const put = await alice.put(`/api/panels/${panelId}/workflow`, { ...workflow.body, patientReference: 'Patient' })
  expect(put.status, JSON.stringify(put.body)).toBe(200)
  viewId = (await alice.post('/api/views', { name: 'Everyone', panelId })).body.id
})
// Each test's subscriptions end with it, so the next test's steps serve only its own.
afterEach(async () => {
  for (const c of [alice, bob, eve]) {
    const list = await c.get('/fhir/Subscription')
    for (const e of list.body.entry ?? []) await c.delete(`/fhir/Subscription/${e.resource.id}`)
  }
})
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
})

async function receiver(answer?: Parameters<typeof startReceiver>[0]) {
  const r = await startReceiver(answer)
  receivers.push(r)
  return r
}

interface Options {
  filters?: string[]
  payload?: string
  heartbeat?: number
  timeout?: number
  header?: string[]
}

/** A backport Subscription to `r`'s endpoint (view `viewId` unless the filters say otherwise). */
function subscription(r: FixtureServer, o: Options = {}): Record<string, unknown> {
  const channelExtension = [
    ...(o.heartbeat ? [{ url: `${IG}/backport-heartbeat-period`, valueUnsignedInt: o.heartbeat }] : []),
    ...(o.timeout ? [{ url: `${IG}/backport-timeout`, valueUnsignedInt: o.timeout }] : []),
  ]
  return {
    resourceType: 'Subscription',
    status: 'requested',
    reason: 'Follow the diabetes list',
    criteria: TOPIC,
    _criteria: {
      extension: (o.filters ?? [`Group?_id=${viewId}`]).map((f) => ({ url: `${IG}/backport-filter-criteria`, valueString: f })),
    },
    channel: {
      ...(channelExtension.length > 0 ? { extension: channelExtension } : {}),
      type: 'rest-hook',
      endpoint: `${r.url}/notify`,
      payload: 'application/fhir+json',
      _payload: { extension: [{ url: `${IG}/backport-payload-content`, valueCode: o.payload ?? 'id-only' }] },
      ...(o.header ? { header: o.header } : {}),
    },
  }
}

async function subscribe(r: FixtureServer, o: Options = {}, c: TestClient = alice) {
  const res = await c.post('/fhir/Subscription', subscription(r, o), FHIR)
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body as {
    id: string
    status: string
    extension: { url: string; valueString: string }[]
    channel: { extension?: unknown[] }
  }
}

/** Runs delivery steps until `r` holds `n` requests (the kick after a commit may send them first). */
async function received(r: FixtureServer, n: number, payload?: 'empty' | 'id-only' | 'full-resource') {
  for (let waited = 0; r.requests.length < n && waited < 5_000; waited += 20) {
    await step(t.deps)
    if (r.requests.length < n) await sleep(20)
  }
  expect(r.requests.length).toBe(n)
  return r.requests.map((q) => checkNotification(JSON.parse(q.body), payload))
}

/**
 * The subscription's status once the outcome of its last delivery is recorded: the sender writes
 * it when the receiver has answered, which may be after the request arrived (on the Deno and
 * Workers targets the server's own delivery races the test's read). Waits up to 5 s for `expected`.
 */
async function settledStatus(id: string, expected: string): Promise<string> {
  let status = ''
  for (let waited = 0; waited < 5_000; waited += 20) {
    status = (await alice.get(`/fhir/Subscription/${id}`)).body.status
    if (status === expected) break
    await sleep(20)
  }
  return status
}

/** Waits a moment, steps, and says nothing more arrived than `n`. */
async function nothingBeyond(r: FixtureServer, n: number) {
  await step(t.deps)
  await sleep(100)
  await step(t.deps)
  expect(r.requests.length).toBe(n)
}

const rowEvent = (
  type: 'row.entered' | 'row.left' | 'row.updated',
  key: string,
  row: Record<string, unknown>,
  view = viewId,
) => ({
  type,
  panelId,
  viewId: view,
  data: { rowId: 1, key, row, ...(type === 'row.updated' ? { previous: row } : {}) },
})

const kindOf = (e: ReadNotification['events'][number]) => e.contexts.find((c) => c.identifier?.system)?.identifier.value

describe('POST /fhir/Subscription', () => {
  it('answers 201 requested, then a handshake makes it active', async () => {
    const r = await receiver()
    const created = await subscribe(r, { header: ['Authorization: Bearer receiver-token'] })
    expect(created).toMatchObject({
      resourceType: 'Subscription',
      status: 'requested',
      criteria: TOPIC,
      channel: { type: 'rest-hook', endpoint: `${r.url}/notify`, payload: 'application/fhir+json' },
    })
    const [handshake] = await received(r, 1, 'id-only')
    expect(handshake).toMatchObject({
      type: 'handshake',
      status: 'requested',
      subscription: `${BASE}/Subscription/${created.id}`,
      topic: TOPIC,
      eventsSinceStart: 0,
    })
    const req = r.requests[0]
    expect(req.url).toBe('/notify')
    expect(req.headers['content-type']).toBe('application/fhir+json')
    expect(req.headers.authorization).toBe('Bearer receiver-token')
    const secret = created.extension.find((e) => e.url === 'urn:panels:fhir:signing-secret')!.valueString
    expect(req.headers['x-signature-256']).toBe(expectedSignature(secret, req.body))
    expect(await settledStatus(created.id, 'active')).toBe('active')
    const read = await alice.get(`/fhir/Subscription/${created.id}`)
    expect(read.status).toBe(200)
    expect(read.headers.get('content-type')).toBe('application/fhir+json')
    expect(read.body.status).toBe('active')
    // Neither the receiver's credentials nor the secret are answered again.
    expect(JSON.stringify(read.body)).not.toContain('receiver-token')
    expect(read.body.extension).toBeUndefined()
  })

  it('ends in error when the handshake fails', async () => {
    const r = await receiver(() => 500)
    const created = await subscribe(r)
    await received(r, 1)
    for (let waited = 0; waited < 2_000; waited += 20) {
      if ((await alice.get(`/fhir/Subscription/${created.id}`)).body.status === 'error') break
      await sleep(20)
    }
    const read = await alice.get(`/fhir/Subscription/${created.id}`)
    expect(read.body).toMatchObject({ status: 'error', error: expect.stringContaining('HTTP 500') })
  })

  it('waits for an answer no longer than its timeout extension', async () => {
    const r = await receiver(() => 'hang')
    const created = await subscribe(r, { timeout: 1 })
    expect(created.channel.extension).toEqual([{ url: `${IG}/backport-timeout`, valueUnsignedInt: 1 }])
    let read = await alice.get(`/fhir/Subscription/${created.id}`)
    for (let waited = 0; read.body.status !== 'error' && waited < 5_000; waited += 50) {
      await step(t.deps)
      await sleep(50)
      read = await alice.get(`/fhir/Subscription/${created.id}`)
    }
    expect(read.body).toMatchObject({ status: 'error', error: expect.stringContaining('Timed out after 1000 ms') })
  })

  it('names the element at fault in a 400 OperationOutcome', async () => {
    const r = await receiver()
    const cases: [Record<string, unknown>, string][] = [
      [{ ...subscription(r), criteria: 'https://elsewhere.example/topic' }, 'Subscription.criteria'],
      [subscription(r, { filters: ['Group?membership-event=entered'] }), 'Subscription.criteria.extension'],
      [subscription(r, { filters: [`Group?_id=${viewId}`, 'Group?membership-event=joined'] }), 'Subscription.criteria.extension'],
      [subscription(r, { payload: 'everything' }), 'Subscription.channel.payload.extension'],
      [subscription(r, { header: ['X-Signature-256: forged'] }), 'Subscription.channel.header'],
      [
        { ...subscription(r), channel: { ...(subscription(r).channel as object), type: 'websocket' } },
        'Subscription.channel.type',
      ],
      [
        { ...subscription(r), channel: { ...(subscription(r).channel as object), endpoint: 'not a url' } },
        'Subscription.channel.endpoint',
      ],
      [{ ...subscription(r), reason: undefined }, 'Subscription.reason'],
    ]
    for (const [body, element] of cases) {
      const res = await alice.post('/fhir/Subscription', body, FHIR)
      expect(res.status, element).toBe(400)
      expect(res.headers.get('content-type')).toBe('application/fhir+json')
      expect(res.body.resourceType).toBe('OperationOutcome')
      expect(
        res.body.issue.flatMap((i: { expression?: string[] }) => i.expression ?? []),
        element,
      ).toContain(element)
    }
    expect(r.requests).toHaveLength(0)
  })

  it('answers 404 for a view the caller may not read, and for another tenant’s', async () => {
    const r = await receiver()
    const bobs = await bob.post('/fhir/Subscription', subscription(r), FHIR)
    expect(bobs.status).toBe(404)
    expect(bobs.body.issue[0].code).toBe('not-found')
    expect((await eve.post('/fhir/Subscription', subscription(r), FHIR)).status).toBe(404)
    expect((await alice.post('/fhir/Subscription', subscription(r, { filters: ['Group?_id=999999'] }), FHIR)).status).toBe(404)
  })
})

describe('notifications', () => {
  it('sends one per row entering the view, numbered from 1, with the patient as focus', async () => {
    const r = await receiver()
    const created = await subscribe(r)
    await received(r, 1)
    const mapping = [
      { sourceField: 'name', targetColumn: 'Name' },
      { sourceField: 'patient', targetColumn: 'Patient' },
    ]
    const rows = [
      { name: 'Ada', patient: 'Patient/p1' },
      { name: 'Grace', patient: 'p2' },
    ]
    expect((await importRows(t, panelId, { format: 'json', mapping }, rows)).body.rowsImported).toBe(2)
    const [, first, second] = await received(r, 3, 'id-only')
    for (const [n, note, patient] of [
      [1, first, 'Patient/p1'],
      [2, second, 'Patient/p2'],
    ] as const) {
      expect(note).toMatchObject({ type: 'event-notification', status: 'active', eventsSinceStart: n })
      expect(note.events).toHaveLength(1)
      expect(note.events[0]).toMatchObject({ number: n, focus: patient })
      expect(note.events[0].contexts[0]).toEqual({ reference: `Group/${viewId}` })
      expect(kindOf(note.events[0])).toBe('entered')
      expect(note.payload).toEqual([
        { fullUrl: `${BASE}/${patient}`, request: { method: 'GET', url: patient }, response: { status: '200' } },
      ])
    }
    expect(r.requests[1].headers['x-event-id']).toBe('1')
    await nothingBeyond(r, 3)
    const status = await alice.get(`/fhir/Subscription/${created.id}/$status`)
    expect(status.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 })
    const statusSummary = checkNotification({
      resourceType: 'Bundle',
      type: 'history',
      entry: [{ ...status.body.entry[0], request: { method: 'GET', url: 'x' }, response: { status: '200' } }],
    })
    expect(statusSummary).toMatchObject({ type: 'query-status', status: 'active', eventsSinceStart: 2 })
  })

  it('keeps to the membership-event filter and numbers only what it sends', async () => {
    const r = await receiver()
    await subscribe(r, { filters: [`Group?_id=${viewId}`, 'Group?membership-event=left,updated'], payload: 'empty' })
    await received(r, 1)
    const other = (await alice.post('/api/views', { name: 'Other', panelId })).body.id
    await emit(t.deps, 'tenant-a', [
      rowEvent('row.entered', 'k1', { Name: 'Ada', Patient: 'Patient/p1' }),
      rowEvent('row.left', 'Patient/p9', { Name: 'Nine' }),
      rowEvent('row.left', 'k3', { Name: 'Else' }, other),
      rowEvent('row.updated', 'k4', { Name: 'Four', Patient: '44' }),
    ])
    const [, left, updated] = await received(r, 3, 'empty')
    expect(left.events).toMatchObject([{ number: 1, focus: 'Patient/p9' }])
    expect(kindOf(left.events[0])).toBe('left')
    expect(updated.events).toMatchObject([{ number: 2, focus: 'Patient/44' }])
    expect(kindOf(updated.events[0])).toBe('updated')
    await nothingBeyond(r, 3)
  })

  it('carries the row as Parameters with full-resource, and names a row without a patient by its key', async () => {
    const r = await receiver()
    await subscribe(r, { payload: 'full-resource' })
    await received(r, 1)
    await emit(t.deps, 'tenant-a', [rowEvent('row.entered', 'import:7', { _id: 7, Name: 'Nobody', Patient: null, Score: 2.5 })])
    const [, note] = await received(r, 2, 'full-resource')
    expect(note.events[0].focus).toBeUndefined()
    expect(note.events[0].contexts).toContainEqual({ identifier: { value: 'import:7' }, display: 'row key' })
    const resource = note.payload[0].resource
    expect(resource.resourceType).toBe('Parameters')
    expect(resource.parameter).toEqual([
      { name: 'key', valueString: 'import:7' },
      { name: 'group', valueReference: { reference: `Group/${viewId}` } },
      { name: 'event', valueCode: 'entered' },
      {
        name: 'column',
        part: [
          { name: 'name', valueString: 'Name' },
          { name: 'value', valueString: 'Nobody' },
        ],
      },
      { name: 'column', part: [{ name: 'name', valueString: 'Patient' }] },
      {
        name: 'column',
        part: [
          { name: 'name', valueString: 'Score' },
          { name: 'value', valueDecimal: 2.5 },
        ],
      },
    ])
  })

  it('never sends events of a view its owner may no longer read', async () => {
    const r = await receiver()
    const shared = (await alice.post('/api/views', { name: 'Shared', panelId })).body.id
    expect((await alice.post(`/api/views/${shared}/publish`, {})).status).toBe(200)
    await subscribe(r, { filters: [`Group?_id=${shared}`] }, bob)
    await received(r, 1)
    await emit(t.deps, 'tenant-a', [rowEvent('row.entered', 'Patient/a', {}, shared)])
    await received(r, 2)
    expect((await alice.post(`/api/views/${shared}/unpublish`, {})).status).toBe(200)
    await emit(t.deps, 'tenant-a', [rowEvent('row.entered', 'Patient/b', {}, shared)])
    await nothingBeyond(r, 2)
  })

  it('gives gapless numbers when several instances serve the queue at once', async () => {
    const r = await receiver()
    await subscribe(r, { payload: 'empty' })
    await received(r, 1)
    const other = await sameDatabaseInstance(t)
    await emit(
      t.deps,
      'tenant-a',
      Array.from({ length: 30 }, (_, i) => rowEvent('row.entered', `Patient/n${i}`, {})),
    )
    for (let waited = 0; r.requests.length < 31 && waited < 10_000; waited += 20) {
      await Promise.all([step(t.deps), step(other), step(t.deps), step(other)])
    }
    const notes = await received(r, 31, 'empty')
    expect(notes.slice(1).map((n) => n.events[0].number)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
  })
})

describe('$events, heartbeats, the end of the view and delete', () => {
  it('replays numbered events from the feed', async () => {
    const r = await receiver()
    const created = await subscribe(r, { payload: 'empty' })
    await received(r, 1)
    await emit(t.deps, 'tenant-a', [
      rowEvent('row.entered', 'Patient/e1', {}),
      rowEvent('row.left', 'Patient/e2', {}),
      rowEvent('row.entered', 'Patient/e3', {}),
    ])
    await received(r, 4)
    const all = await alice.get(`/fhir/Subscription/${created.id}/$events`)
    expect(all.status).toBe(200)
    const replay = checkNotification(all.body, 'empty')
    expect(replay).toMatchObject({ type: 'query-event', eventsSinceStart: 3 })
    expect(replay.events.map((e) => [e.number, e.focus, kindOf(e)])).toEqual([
      [1, 'Patient/e1', 'entered'],
      [2, 'Patient/e2', 'left'],
      [3, 'Patient/e3', 'entered'],
    ])
    const some = await alice.get(
      `/fhir/Subscription/${created.id}/$events?eventsSinceNumber=2&eventsUntilNumber=2&content=id-only`,
    )
    const part = checkNotification(some.body, 'id-only')
    expect(part.events.map((e) => e.number)).toEqual([2])
    expect(part.payload).toHaveLength(1)
    const bad = await alice.get(`/fhir/Subscription/${created.id}/$events?eventsSinceNumber=3&eventsUntilNumber=1`)
    expect(bad.status).toBe(400)
    expect(bad.body.resourceType).toBe('OperationOutcome')
  })

  it('forgets the numbers of events the feed no longer retains', async () => {
    const r = await receiver()
    const created = await subscribe(r, { payload: 'empty' })
    await received(r, 1)
    await emit(t.deps, 'tenant-a', [rowEvent('row.entered', 'Patient/old', {}), rowEvent('row.entered', 'Patient/new', {})])
    await received(r, 3)
    const numbered = async () =>
      (
        await t.client.execute({
          sql: 'SELECT count(*) AS n FROM fhir_topic_events WHERE subscription_id = ?',
          args: [created.id],
        })
      ).rows[0].n
    expect(Number(await numbered())).toBe(2)
    // Retention removes the older event (as pruneEvents would past EVENTS_RETENTION_MAX).
    await t.client.execute({
      sql: "DELETE FROM events WHERE tenant_id = 'tenant-a' AND seq = (SELECT event_seq FROM fhir_topic_events WHERE subscription_id = ? AND event_number = 1)",
      args: [created.id],
    })
    await t.client.execute({
      sql: "DELETE FROM events WHERE tenant_id = 'tenant-a' AND seq < (SELECT event_seq FROM fhir_topic_events WHERE subscription_id = ? AND event_number = 1)",
      args: [created.id],
    })
    await runMaintenanceTick(t.deps)
    expect(Number(await numbered())).toBe(1)
    const replay = checkNotification((await alice.get(`/fhir/Subscription/${created.id}/$events`)).body, 'empty')
    expect(replay.events.map((e) => [e.number, e.focus])).toEqual([[2, 'Patient/new']])
    expect(replay.eventsSinceStart).toBe(2)
  })

  it('sends a heartbeat after the heartbeat period without notifications, from the maintenance tick', async () => {
    const r = await receiver()
    await subscribe(r, { heartbeat: 60 })
    await received(r, 1)
    t.clock.advance(30_000)
    await runMaintenanceTick(t.deps)
    await nothingBeyond(r, 1)
    t.clock.advance(31_000)
    await runMaintenanceTick(t.deps)
    const [, heartbeat] = await received(r, 2)
    expect(heartbeat).toMatchObject({ type: 'heartbeat', status: 'active', eventsSinceStart: 0, events: [] })
    // One per period: the next is due 60 s after this one.
    await runMaintenanceTick(t.deps)
    await nothingBeyond(r, 2)
  })

  it('ends the subscriptions of a deleted view with an error notification, then stops', async () => {
    const r = await receiver()
    const doomed = (await alice.post('/api/views', { name: 'Doomed', panelId })).body.id
    const created = await subscribe(r, { filters: [`Group?_id=${doomed}`] })
    await received(r, 1)
    expect((await alice.delete(`/api/views/${doomed}`)).status).toBe(204)
    const [, end] = await received(r, 2)
    expect(end).toMatchObject({ type: 'event-notification', status: 'error', events: [] })
    expect(end.errors[0].text).toContain(`Group/${doomed}`)
    expect(await settledStatus(created.id, 'error')).toBe('error')
    await emit(t.deps, 'tenant-a', [rowEvent('row.entered', 'Patient/late', {}, doomed)])
    t.clock.advance(3_600_000)
    await nothingBeyond(r, 2)
  })

  it('deletes: a 404 afterwards and nothing more is sent', async () => {
    const r = await receiver()
    const created = await subscribe(r)
    await received(r, 1)
    expect((await alice.delete(`/fhir/Subscription/${created.id}`)).status).toBe(204)
    expect((await alice.get(`/fhir/Subscription/${created.id}`)).status).toBe(404)
    await emit(t.deps, 'tenant-a', [rowEvent('row.entered', 'Patient/gone', {})])
    await nothingBeyond(r, 1)
  })
})

describe('tenancy and ownership', () => {
  it('shows a subscription to its owner only: another user or tenant gets 404', async () => {
    const r = await receiver()
    const created = await subscribe(r)
    const list = await alice.get('/fhir/Subscription')
    expect(list.body).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 })
    expect(list.body.entry[0].fullUrl).toBe(`${BASE}/Subscription/${created.id}`)
    for (const c of [bob, eve]) {
      expect((await c.get('/fhir/Subscription')).body.total).toBe(0)
      for (const path of ['', '/$status', '/$events']) {
        const res = await c.get(`/fhir/Subscription/${created.id}${path}`)
        expect(res.status).toBe(404)
        expect(res.body.resourceType).toBe('OperationOutcome')
      }
      expect((await c.delete(`/fhir/Subscription/${created.id}`)).status).toBe(404)
    }
    expect((await alice.get(`/fhir/Subscription/${created.id}`)).status).toBe(200)
    // The JSON API's webhook list keeps to webhooks.
    expect((await alice.get('/api/subscriptions')).body.subscriptions).toEqual([])
    expect((await alice.get(`/api/subscriptions/${created.id}`)).status).toBe(404)
    expect((await alice.delete(`/api/subscriptions/${created.id}`)).status).toBe(404)
  })

  it('lists Subscription and the topic canonical in the CapabilityStatement', async () => {
    const cs = (await (await t.app.request('/fhir/metadata')).json()) as any
    const entry = cs.rest[0].resource.find((x: { type: string }) => x.type === 'Subscription')
    expect(entry.interaction.map((i: { code: string }) => i.code).sort()).toEqual(['create', 'delete', 'read', 'search-type'])
    expect(entry.operation.map((o: { name: string }) => o.name)).toEqual(['status', 'events'])
    expect(entry.extension).toEqual([{ url: `${IG}/capabilitystatement-subscriptiontopic-canonical`, valueCanonical: TOPIC }])
  })
})
