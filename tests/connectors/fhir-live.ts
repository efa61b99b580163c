import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { patients } from '../helpers/fhir-server.ts'
import { type SubscriptionServer, startRelay, startSubscriptionServer } from '../helpers/fhir-subscription-server.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import type { FixtureServer } from '../helpers/servers.ts'
import { createPanel } from '../modules/datasources/fixtures.ts'

/**
 * What the tests of live fhir sources share: the loopback FHIR server that accepts Subscriptions
 * (with a bearer token of its own), the relay its notifications reach the app through, and per
 * test a fresh app with `PUBLIC_BASE_URL` at the relay, a client of tenant-a's alice and a panel.
 */

export const UPSTREAM_TOKEN = 'upstream-secret-token'
export const TOPIC = 'http://example.org/fhir/SubscriptionTopic/patient-admission'

/** The servers, for `beforeAll`: the relay hands each request to the app `app()` answers at the time. */
export async function startLiveServers(app: () => TestApp): Promise<{ fx: SubscriptionServer; relay: FixtureServer }> {
  const fx = await startSubscriptionServer({ token: UPSTREAM_TOKEN })
  const relay = await startRelay(() => (request) => app().app.request(request))
  return { fx, relay }
}

/** A fresh app, client and panel, for `beforeEach`: the FHIR server emptied and given two Patients. */
export async function freshLiveWorld(
  fx: SubscriptionServer,
  relay: FixtureServer,
): Promise<{ t: TestApp; alice: TestClient; panelId: number }> {
  fx.reset()
  for (const p of patients(2)) fx.put(p)
  const t = await makeTestApp({ env: { PUBLIC_BASE_URL: relay.url } })
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  return { t, alice, panelId: (await createPanel(alice)).id }
}

/**
 * A backport event-notification Bundle (R4 `Parameters` status): its counter (the highest number
 * unless given), its events' numbers (with their `timestamp`s when given) and its change entries.
 */
export const eventBundle = (n: { since?: number; numbers: number[]; times?: string[]; entries: Record<string, unknown>[] }) => ({
  resourceType: 'Bundle',
  type: 'history',
  entry: [
    {
      resource: {
        resourceType: 'Parameters',
        parameter: [
          { name: 'status', valueCode: 'active' },
          { name: 'type', valueCode: 'event-notification' },
          { name: 'events-since-subscription-start', valueString: String(n.since ?? Math.max(...n.numbers)) },
          ...n.numbers.map((k, i) => ({
            name: 'notification-event',
            part: [
              { name: 'event-number', valueString: String(k) },
              ...(n.times?.[i] ? [{ name: 'timestamp', valueInstant: n.times[i] }] : []),
            ],
          })),
        ],
      },
    },
    ...n.entries,
  ],
})
