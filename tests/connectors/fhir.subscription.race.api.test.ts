import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { TestApp } from '../helpers/app.ts'
import type { SubscriptionServer } from '../helpers/fhir-subscription-server.ts'
import type { TestClient } from '../helpers/http.ts'
import type { FixtureServer } from '../helpers/servers.ts'
import { createSource, waitFor } from '../modules/datasources/fixtures.ts'
import { freshLiveWorld, startLiveServers, TOPIC, UPSTREAM_TOKEN } from './fhir-live.ts'

// Writers of a live source's upstream Subscription that race (docs/connectors-fhir.md "The upstream
// Subscription"): whatever the interleaving, one Subscription survives, the one the source records,
// and its channel is the token and secret stored (its notifications are accepted, not 401).

const ROUNDS = 5

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

type Source = { id: number; config: Record<string, any> }

/** A live source (topic-based, the given heartbeat), created and handshaken. */
async function handshaken(heartbeatSeconds = 60): Promise<Source> {
  const created = await createSource(
    alice,
    panelId,
    {
      baseUrl: fx.baseUrl,
      resourceType: 'Patient',
      authentication: { type: 'bearer', token: UPSTREAM_TOKEN },
      subscription: { topic: TOPIC, filters: ['Patient?active=true'], payload: 'full-resource', heartbeatSeconds },
    },
    'fhir',
  )
  expect(created.status).toBe(201)
  await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
  return created.body as Source
}
/** PUT of the source's config with other filters (and payload): a change that replaces the Subscription. */
const refilter = (source: Source, filter: string, payload = 'full-resource') =>
  alice.put(`/api/datasources/${source.id}`, {
    config: { ...source.config, subscription: { ...source.config.subscription, filters: [filter], payload } },
  })
const sourceOf = async (id: number) =>
  (await alice.get(`/api/panels/${panelId}/datasources`)).body.find((s: { id: number }) => s.id === id)
const filtersOf = (resource: Record<string, any>) =>
  (resource._criteria?.extension ?? []).map((e: { valueString: string }) => e.valueString)

/**
 * The server holds exactly one Subscription, the one `subscriptionStatus.id` names, made from the
 * source's config as it is now; its handshake and a heartbeat through it are accepted.
 */
async function expectOneLive(sourceId: number, round: number) {
  expect([...fx.subscriptions.keys()], `round ${round}`).toHaveLength(1)
  const sub = fx.only()
  const source = await sourceOf(sourceId)
  expect(source.subscriptionStatus.id).toBe(sub.id)
  expect(filtersOf(sub.resource)).toEqual(source.config.subscription.filters)
  expect(sub.payload).toBe(source.config.subscription.payload)
  const handshake = await waitFor(async () => fx.sent.find((s) => s.subscription === sub.id && s.type === 'handshake'))
  expect(handshake.status).toBe(200)
  const [beat] = await fx.heartbeat(sub.id)
  expect(beat).toMatchObject({ status: 200, body: { type: 'heartbeat' } })
  return sub
}

describe('PUT /api/datasources/{id} of a live fhir source, concurrently', () => {
  it('concurrent changes of the subscription leave one upstream Subscription, the recorded one, which notifies with the stored secret', async () => {
    const source = await handshaken()
    for (let round = 1; round <= ROUNDS; round++) {
      const answers = await Promise.all([
        refilter(source, `Patient?active=true&_tag=a${round}`),
        refilter(source, `Patient?active=true&_tag=b${round}`, 'id-only'),
        refilter(source, `Patient?active=true&_tag=c${round}`),
      ])
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
      await expectOneLive(source.id, round)
    }
  })

  it('a change racing the deletion of the source leaves no Subscription upstream', async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const source = await handshaken()
      const [put, removed] = await Promise.all([
        refilter(source, `Patient?active=true&_tag=d${round}`),
        alice.delete(`/api/datasources/${source.id}`),
      ])
      expect(removed.status, `round ${round}`).toBe(204)
      // The change either came first (200) or found the source gone (404), or met the removal (409).
      expect([200, 404, 409], `round ${round}`).toContain(put.status)
      expect(await sourceOf(source.id)).toBeUndefined()
      // A writer overtaken while posting deletes what it made: wait for the requests to settle.
      await waitFor(async () => (fx.subscriptions.size === 0 ? true : undefined))
      expect((await t.client.execute('SELECT count(*) AS n FROM fhir_source_subscriptions')).rows[0].n).toBe(0)
    }
  })

  it('a change racing the maintenance tick that re-makes a dropped Subscription leaves one, the recorded one', async () => {
    const source = await handshaken(10)
    for (let round = 1; round <= ROUNDS; round++) {
      // The server forgets the Subscription, and two heartbeat periods pass: the tick's check re-makes it.
      fx.drop(fx.only().id)
      t.clock.advance(25_000)
      const [answer] = await Promise.all([refilter(source, `Patient?active=true&_tag=t${round}`), t.tick()])
      expect(answer.status).toBe(200)
      await expectOneLive(source.id, round)
    }
  })
})
