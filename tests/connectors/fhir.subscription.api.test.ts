import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { startRelay, startSubscriptionServer, type SubscriptionServer } from '../helpers/fhir-subscription-server.ts'
import { patients } from '../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import type { FixtureServer } from '../helpers/servers.ts'
import { createPanel, createSource, currentRecords, runsOf, waitFor } from '../modules/datasources/fixtures.ts'

const UPSTREAM_TOKEN = 'upstream-secret-token'
const TOPIC = 'http://example.org/fhir/SubscriptionTopic/patient-admission'

let fx: SubscriptionServer
let relay: FixtureServer
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  fx = await startSubscriptionServer({ token: UPSTREAM_TOKEN })
  relay = await startRelay(() => (request) => t.app.request(request))
})
afterAll(async () => {
  await fx.close()
  await relay.close()
})
beforeEach(async () => {
  fx.reset()
  for (const p of patients(2)) fx.put(p)
  t = await makeTestApp({ env: { PUBLIC_BASE_URL: relay.url } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})

const live = (subscription: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  createSource(
    alice,
    panelId,
    {
      baseUrl: fx.baseUrl,
      resourceType: 'Patient',
      authentication: { type: 'bearer', token: UPSTREAM_TOKEN },
      subscription: { topic: TOPIC, filters: ['Patient?active=true'], payload: 'full-resource', ...subscription },
      ...extra,
    },
    'fhir',
  )
const keys = async (id: number) => (await currentRecords(t, id)).map((r) => r.key).sort()
const sourceOf = async (id: number) => (await alice.get(`/api/panels/${panelId}/datasources`)).body.find((s: { id: number }) => s.id === id)

describe('fhir sources in subscription mode', () => {
  it('registers a backport Subscription, is handshaken, and applies full-resource notifications at once', async () => {
    const created = await live()
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ type: 'fhir', syncStatus: 'success' })
    const sub = fx.only()
    expect(sub.resource).toMatchObject({
      meta: { profile: ['http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition/backport-subscription'] },
      status: 'requested',
      criteria: TOPIC,
      _criteria: { extension: [{ valueString: 'Patient?active=true' }] },
      channel: { type: 'rest-hook', payload: 'application/fhir+json' },
    })
    expect(sub.payload).toBe('full-resource')
    expect(sub.endpoint).toMatch(new RegExp(`^${relay.url}/fhir-notify/[A-Za-z0-9_-]{43}$`))
    expect(sub.headers.Authorization).toMatch(/^Bearer [A-Za-z0-9_-]{43}$/)
    expect(await keys(created.body.id)).toEqual(['Patient/pat-1', 'Patient/pat-2'])
    await waitFor(async () => (fx.sent.some((s) => s.type === 'handshake' && s.status === 200) ? true : undefined))
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ id: sub.id, status: 'active', eventsSinceStart: 0 })

    const [sent] = await fx.change(patients(3)[2])
    expect(sent).toMatchObject({ status: 200, body: { type: 'event-notification', applied: 1, duplicate: false } })
    expect(await keys(created.body.id)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 1 })
    expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({ trigger: 'subscription', status: 'success', rowsWritten: 1 })
  })
})
