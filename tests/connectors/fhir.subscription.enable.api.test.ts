import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.ts'
import { patients } from '../helpers/fhir-server.ts'
import type { SubscriptionServer } from '../helpers/fhir-subscription-server.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { type FixtureServer, sleep } from '../helpers/servers.ts'
import { createSource, currentRecords, runsOf, waitFor } from '../modules/datasources/fixtures.ts'
import { eventBundle, freshLiveWorld, startLiveServers, TOPIC, UPSTREAM_TOKEN } from './fhir-live.ts'

// The live feed's switch, `config.subscription.enabled` (docs/connectors-fhir.md "Switching the live
// feed off and on"), against the loopback FHIR server of the subscription tests.

const SUBSCRIPTION = { topic: TOPIC, filters: ['Patient?active=true'], payload: 'full-resource' }
const NO_TICK_WORK = { caughtUp: 0, checked: 0, remade: 0, removed: 0 }

let fx: SubscriptionServer
let relay: FixtureServer
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  ;({ fx, relay } = await startLiveServers(() => t))
})
afterAll(async () => {
  await fx.close()
  await relay.close()
})
beforeEach(async () => {
  ;({ t, alice, panelId } = await freshLiveWorld(fx, relay))
})

const configOf = (subscription: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  baseUrl: fx.baseUrl,
  resourceType: 'Patient',
  authentication: { type: 'bearer', token: UPSTREAM_TOKEN },
  subscription,
  ...extra,
})
/** A live source (topic-based), created and handshaken. */
async function handshaken() {
  const created = await createSource(alice, panelId, configOf(SUBSCRIPTION), 'fhir')
  expect(created.status).toBe(201)
  await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
  return created.body as { id: number; config: Record<string, any> }
}
/** PUT of the source's config with `subscription.enabled` (and more config) changed. */
const switchTo = (source: { id: number; config: Record<string, any> }, enabled: boolean, extra = {}) =>
  alice.put(`/api/datasources/${source.id}`, {
    config: { ...source.config, ...extra, subscription: { ...source.config.subscription, enabled } },
  })
const keys = async (id: number) => (await currentRecords(t, id)).map((r) => r.key).sort()
const subscriptionRow = async (id: number) =>
  (await t.client.execute({ sql: 'SELECT * FROM fhir_source_subscriptions WHERE data_source_id = ?', args: [id] }))
    .rows[0] as Record<string, unknown>
const requestsTo = (method: string, path: string) =>
  fx.server.requests.filter((r) => r.method === method && r.url === path).length
/** An event notification carrying one Patient, as the backport sends it. */
const patientEvent = (patient: Record<string, unknown>, number: number) =>
  JSON.stringify(
    eventBundle({
      numbers: [number],
      entries: [{ fullUrl: `${fx.baseUrl}/Patient/${patient.id}`, resource: patient, request: { method: 'PUT' } }],
    }),
  )
const notify = (endpoint: string, headers: Record<string, string>, body: string, suffix = '', method = 'POST') =>
  t.app.request(`${new URL(endpoint).pathname}${suffix}`, {
    method,
    headers: { 'content-type': 'application/fhir+json', ...headers },
    body,
  })

describe('switching the live feed of a fhir source off and on', () => {
  it('off: the upstream Subscription is deleted, the source says off, and its URL refuses notifications (409), changing nothing', async () => {
    const source = await handshaken()
    const first = fx.only()
    // Another tenant cannot reach the switch: the source is not found, and nothing happens upstream.
    const bob = clientFor(t.app, 'tenant-b', 'bob')
    const foreign = await bob.put(`/api/datasources/${source.id}`, {
      config: { ...source.config, subscription: { ...SUBSCRIPTION, enabled: false } },
    })
    expect(foreign.status).toBe(404)
    expect(fx.only().id).toBe(first.id)
    const off = await switchTo(source, false)
    expect(off.status).toBe(200)
    expect(off.body.subscriptionStatus).toMatchObject({ id: null, status: 'off' })
    expect(off.body.config.subscription).toEqual({ ...SUBSCRIPTION, enabled: false })
    expect(fx.subscriptions.size).toBe(0)
    expect(requestsTo('DELETE', `/fhir/Subscription/${first.id}`)).toBe(1)
    // An update like any other: its change record carries the switch.
    const change = await t.client.execute({
      sql: `SELECT action, changes FROM changes WHERE entity_type = 'DataSource' AND entity_id = ? ORDER BY id DESC LIMIT 1`,
      args: [source.id],
    })
    expect(change.rows[0].action).toBe('UPDATE')
    const diff = JSON.parse(String(change.rows[0].changes)).config
    expect(diff.oldValue.subscription.enabled).toBeUndefined()
    expect(diff.newValue.subscription.enabled).toBe(false)

    // The state row stays (its token with it); a notification to its URL is refused.
    const rowBefore = await subscriptionRow(source.id)
    expect(rowBefore).toMatchObject({ status: 'off', upstream_id: null, token_hash: expect.any(String) })
    const recordsBefore = await currentRecords(t, source.id)
    const runsBefore = (await runsOf(t, source.id)).length
    const refused = await notify(first.endpoint, first.headers, patientEvent(patients(9)[8], 1))
    expect(refused.status).toBe(409)
    expect(await refused.json()).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('switched off') })
    // A handshake or heartbeat too; a sender without the channel header still learns nothing but 401.
    const beat = patientEvent(patients(9)[8], 1).replace('event-notification', 'heartbeat')
    expect((await notify(first.endpoint, first.headers, beat)).status).toBe(409)
    expect((await notify(first.endpoint, { Authorization: 'Bearer wrong' }, beat)).status).toBe(401)
    expect(await currentRecords(t, source.id)).toEqual(recordsBefore)
    expect(await runsOf(t, source.id)).toHaveLength(runsBefore)
    expect(await subscriptionRow(source.id)).toEqual(rowBefore)

    // Off again (with another change): nothing more is deleted or made upstream.
    const again = await switchTo(source, false, { pageSize: 50 })
    expect(again.status).toBe(200)
    expect(again.body.subscriptionStatus).toMatchObject({ id: null, status: 'off' })
    expect(requestsTo('DELETE', `/fhir/Subscription/${first.id}`)).toBe(1)
    expect(requestsTo('POST', '/fhir/Subscription')).toBe(1)
  })

  it('the maintenance tick neither checks, re-makes nor catches up a feed that is off', async () => {
    const source = await handshaken()
    expect((await switchTo(source, false)).status).toBe(200)
    fx.put(patients(3)[2])
    // A catch-up owed when the feed went off (a notification that met a sync) stays owed.
    const owed = '2025-06-01T00:00:00.000Z'
    await t.client.execute({
      sql: 'UPDATE fhir_source_subscriptions SET catch_up_from = ? WHERE data_source_id = ?',
      args: [owed, source.id],
    })
    const searches = fx.searches.length
    // Far beyond two heartbeat periods: a source switched on would be read and made again.
    t.clock.advance(3_600_000)
    const tick = await t.tick()
    expect(tick.fhirSubscriptions).toEqual(NO_TICK_WORK)
    expect(fx.subscriptions.size).toBe(0)
    expect(requestsTo('POST', '/fhir/Subscription')).toBe(1)
    expect(fx.searches).toHaveLength(searches)
    expect(await keys(source.id)).toEqual(['Patient/pat-1', 'Patient/pat-2'])
    expect(await subscriptionRow(source.id)).toMatchObject({ status: 'off', upstream_id: null, catch_up_from: owed })
  })

  it('on again: a new Subscription is made, and the catch-up brings what changed while it was off (row.entered)', async () => {
    const view = await alice.post('/api/views', { name: 'Everyone', panelId })
    expect(view.status).toBe(201)
    // The service's clock at the server's: the catch-up asks for what changed after the last instant applied.
    await sleep(5)
    t.clock.set(new Date(Date.now() - 1).toISOString())
    const source = await handshaken()
    const first = fx.only()
    await fx.change(patients(3)[2])
    expect((await switchTo(source, false)).status).toBe(200)
    const { caught_up_at: caughtUpAt } = await subscriptionRow(source.id)
    // Changes while off: nobody is notified (the server holds no Subscription of ours).
    await sleep(5)
    fx.put(patients(4)[3])
    fx.put({ ...patients(2)[1], active: false })
    const searches = fx.searches.length

    const on = await switchTo(source, true)
    expect(on.status).toBe(200)
    const second = fx.only()
    expect(second.id).not.toBe(first.id)
    expect(second.endpoint).not.toBe(first.endpoint)
    expect(second.resource).toMatchObject({ criteria: TOPIC, status: 'requested' })
    expect(on.body.subscriptionStatus).toMatchObject({ id: second.id, status: expect.stringMatching(/requested|active/) })
    await waitFor(async () => ((await keys(source.id)).includes('Patient/pat-4') ? true : undefined))
    expect(decodeURIComponent(fx.searches[searches])).toBe(`/fhir/Patient?_lastUpdated=gt${caughtUpAt}`)
    expect((await currentRecords(t, source.id)).find((r) => r.key === 'Patient/pat-2')?.data.active).toBe(false)
    const catchUp = await waitFor(async () => {
      const last = (await runsOf(t, source.id)).sort((a, b) => a.id - b.id).at(-1)
      return last?.status === 'syncing' ? undefined : last
    })
    expect(catchUp).toMatchObject({ trigger: 'subscription', status: 'success', rowsDeleted: 0 })
    const feed = await alice.get(`/api/panels/${panelId}/events?after=0`)
    const entered = feed.body.events.filter((e: { type: string }) => e.type === 'row.entered')
    expect(JSON.stringify(entered)).toContain('pat-4')
    await waitFor(async () => ((await subscriptionRow(source.id)).catch_up_from === null ? true : undefined))

    // The old URL is dead (the new Subscription has its own token); the new one is live.
    expect((await notify(first.endpoint, first.headers, patientEvent(patients(9)[8], 1))).status).toBe(401)
    await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
    const [sent] = await fx.change(patients(5)[4])
    expect(sent).toMatchObject({ status: 200, body: { applied: 1, duplicate: false } })

    // Saying "on" again, when on, makes nothing anew.
    const still = await alice.put(`/api/datasources/${source.id}`, {
      config: { ...on.body.config, subscription: { ...on.body.config.subscription, enabled: true }, pageSize: 100 },
    })
    expect(still.status).toBe(200)
    expect(fx.only().id).toBe(second.id)
    expect(requestsTo('POST', '/fhir/Subscription')).toBe(2)
  })

  it('classic criteria: on again, the update itself starts the catch-up (no handshake, no tick)', async () => {
    const created = await createSource(alice, panelId, configOf({ criteria: 'Patient?active=true', payload: 'id-only' }), 'fhir')
    expect(created.status).toBe(201)
    const source = created.body as { id: number; config: Record<string, any> }
    const first = fx.only()
    expect((await switchTo(source, false)).status).toBe(200)
    expect(fx.subscriptions.size).toBe(0)
    // A classic sender's PUT to {endpoint}/{type}/{id} is refused as well.
    const put = await notify(first.endpoint, first.headers, JSON.stringify(patients(3)[2]), '/Patient/pat-3', 'PUT')
    expect(put.status).toBe(409)
    fx.put(patients(3)[2])
    expect(await keys(source.id)).toEqual(['Patient/pat-1', 'Patient/pat-2'])

    expect((await switchTo(source, true)).status).toBe(200)
    expect(fx.only().resource).toMatchObject({ criteria: 'Patient?active=true' })
    await waitFor(async () => ((await keys(source.id)).includes('Patient/pat-3') ? true : undefined))
    expect(fx.searches.some((q) => q.includes('_lastUpdated=gt'))).toBe(true)
  })

  it('with the feed on, the scheduled full sync still runs (and removes what the server deleted); the Subscription stays', async () => {
    const created = await createSource(alice, panelId, configOf(SUBSCRIPTION, { schedule: '*/5 * * * *' }), 'fhir')
    expect(created.status).toBe(201)
    await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
    const sub = fx.only()
    const source = created.body as { id: number; nextSyncAt: string }
    fx.put(patients(3)[2])
    fx.resources.delete('Patient/pat-1')
    t.clock.set(new Date(new Date(source.nextSyncAt).getTime() + 1000).toISOString())
    expect(await t.tick()).toMatchObject({ started: 1, succeeded: 1 })
    expect((await runsOf(t, source.id)).sort((a, b) => a.id - b.id).at(-1)).toMatchObject({
      trigger: 'schedule',
      status: 'success',
    })
    expect(await keys(source.id)).toEqual(['Patient/pat-2', 'Patient/pat-3'])
    expect(fx.only().id).toBe(sub.id)
    expect(requestsTo('POST', '/fhir/Subscription')).toBe(1)
    // The feed goes on after it: the next change is applied at once.
    const [sent] = await fx.change(patients(4)[3])
    expect(sent.body).toMatchObject({ applied: 1, duplicate: false })
  })

  it('created off: no Subscription is made, the scheduled full sync still runs, and switching on catches up from before the first sync', async () => {
    const created = await createSource(
      alice,
      panelId,
      configOf({ ...SUBSCRIPTION, enabled: false }, { schedule: '*/5 * * * *' }),
      'fhir',
    )
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ syncStatus: 'success', subscriptionStatus: { id: null, status: 'off' } })
    const source = created.body as { id: number; config: Record<string, any>; nextSyncAt: string }
    expect(requestsTo('POST', '/fhir/Subscription')).toBe(0)
    expect(await keys(source.id)).toEqual(['Patient/pat-1', 'Patient/pat-2'])
    const row = await subscriptionRow(source.id)
    expect(row).toMatchObject({ status: 'off', upstream_id: null, caught_up_at: t.clock.now().toISOString() })

    // The schedule is about the rows, not the feed: its full sync runs (and removes what the server deleted).
    fx.put(patients(3)[2])
    fx.resources.delete('Patient/pat-1')
    t.clock.set(new Date(new Date(source.nextSyncAt).getTime() + 1000).toISOString())
    const tick = await t.tick()
    expect(tick).toMatchObject({ started: 1, succeeded: 1, fhirSubscriptions: NO_TICK_WORK })
    expect((await runsOf(t, source.id)).sort((a, b) => a.id - b.id).at(-1)).toMatchObject({ trigger: 'schedule' })
    expect(await keys(source.id)).toEqual(['Patient/pat-2', 'Patient/pat-3'])
    expect(requestsTo('POST', '/fhir/Subscription')).toBe(0)

    const searches = fx.searches.length
    const on = await switchTo(source, true)
    expect(on.status).toBe(200)
    expect(fx.only().resource).toMatchObject({ criteria: TOPIC })
    await waitFor(async () => (fx.searches.length > searches ? true : undefined))
    expect(decodeURIComponent(fx.searches[searches])).toBe(`/fhir/Patient?_lastUpdated=gt${row.caught_up_at}`)
  })
})
