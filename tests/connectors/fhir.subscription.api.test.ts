import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { runBatch } from '../../src/db/client.ts'
import { CATCH_UP_MARGIN_MS } from '../../src/modules/datasources/datasources.fhir-catch-up.ts'
import { claimOnCounter, MAX_ID_ONLY_READS } from '../../src/modules/datasources/datasources.fhir-notify-events.ts'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { patients } from '../helpers/fhir-server.ts'
import { type SubscriptionServer, startSubscriptionServer } from '../helpers/fhir-subscription-server.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import type { FixtureServer } from '../helpers/servers.ts'
import { createPanel, createSource, currentRecords, runsOf, waitFor } from '../modules/datasources/fixtures.ts'
import { eventBundle, freshLiveWorld, startLiveServers, TOPIC, UPSTREAM_TOKEN } from './fhir-live.ts'

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
/** A live source, created and handshaken. */
async function handshaken(subscription: Record<string, unknown> = {}) {
  const created = await live(subscription)
  expect(created.status).toBe(201)
  await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
  return created
}
const keys = async (id: number) => (await currentRecords(t, id)).map((r) => r.key).sort()
const sourceOf = async (id: number) =>
  (await alice.get(`/api/panels/${panelId}/datasources`)).body.find((s: { id: number }) => s.id === id)

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
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({
      id: sub.id,
      status: 'active',
      eventsSinceStart: 0,
    })

    const [sent] = await fx.change(patients(3)[2])
    expect(sent).toMatchObject({ status: 200, body: { type: 'event-notification', applied: 1, duplicate: false } })
    expect(await keys(created.body.id)).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 1 })
    expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({
      trigger: 'subscription',
      status: 'success',
      rowsWritten: 1,
    })
  })

  it("a notification's write is a sync's: a run, a SYNC change record and the view owners' notices", async () => {
    const created = await handshaken()
    // Bob owns a view of the panel (as in the sync tests): he is told what entered it.
    await t.client.execute({
      sql: `INSERT INTO views (tenant_id, user_id, panel_id, name, config, metadata, filters, sorting, column_visibility, aggregations, created_at, updated_at)
            VALUES ('${created.body.tenantId}', 'bob', ?, 'v', '{"columns":[],"groupBy":[],"layout":"table"}', '{}', '[]', '[]', '{}', '[]', 'now', 'now')`,
      args: [panelId],
    })
    const noticesBefore = (await t.client.execute('SELECT count(*) AS n FROM notifications')).rows[0].n
    const [sent] = await fx.change(patients(3)[2])
    expect(sent.body).toMatchObject({ applied: 1 })
    const changes = await t.client.execute({
      sql: "SELECT action, changes FROM changes WHERE entity_type = 'DataSource' AND entity_id = ? ORDER BY id",
      args: [created.body.id],
    })
    const last = changes.rows.at(-1)!
    expect(last.action).toBe('SYNC')
    expect(JSON.parse(String(last.changes))).toMatchObject({ recordsProcessed: { newValue: 1 } })
    const notices = await t.client.execute({
      sql: 'SELECT user_id, type, message FROM notifications ORDER BY id LIMIT -1 OFFSET ?',
      args: [Number(noticesBefore)],
    })
    // As for any sync: what entered the view, and what was synchronised.
    expect(notices.rows.map((r) => [r.user_id, r.type, r.message])).toEqual([
      ['bob', 'DATA_CHANGED', 'View "v": 1 row entered (sync)'],
      ['bob', 'DATA_CHANGED', '1 record synchronised from fhir source'],
    ])
    expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({
      trigger: 'subscription',
      status: 'success',
      rowsWritten: 1,
    })
  })

  it('id-only: reads each resource with the source authentication; a DELETE or a 410 removes the record', async () => {
    const created = await handshaken({ payload: 'id-only' })
    expect(fx.only().resource.channel._payload.extension[0]).toMatchObject({ valueCode: 'id-only' })
    const [sent] = await fx.change({ ...patients(3)[2], active: false })
    expect(sent).toMatchObject({ status: 200, body: { applied: 1 } })
    expect(fx.reads).toEqual(['Patient/pat-3'])
    const pat3 = fx.server.requests.find((r) => r.url === '/fhir/Patient/pat-3')
    expect(pat3?.headers.authorization).toBe(`Bearer ${UPSTREAM_TOKEN}`)
    expect((await currentRecords(t, created.body.id)).find((r) => r.key === 'Patient/pat-3')?.data.active).toBe(false)

    await fx.remove('Patient', 'pat-1')
    expect(await keys(created.body.id)).toEqual(['Patient/pat-2', 'Patient/pat-3'])
    // An id-only event of a resource deleted meanwhile: its read answers 410, the record goes.
    fx.put(patients(2)[1])
    fx.resources.delete('Patient/pat-2')
    await fx.remove('Patient', 'pat-2')
    expect(await keys(created.body.id)).toEqual(['Patient/pat-3'])
    expect((await runsOf(t, created.body.id)).filter((r) => r.trigger === 'subscription').map((r) => r.rowsDeleted)).toEqual([
      0, 1, 1,
    ])
  })

  it('refuses a wrong or missing token or channel header with 401, and changes nothing', async () => {
    const created = await live()
    const sub = fx.only()
    await waitFor(async () => (fx.sent.some((s) => s.type === 'handshake') ? true : undefined))
    const before = await currentRecords(t, created.body.id)
    const statusBefore = (await sourceOf(created.body.id)).subscriptionStatus
    const bundle = JSON.stringify(
      eventBundle({
        numbers: [1],
        entries: [
          {
            fullUrl: `${fx.baseUrl}/Patient/evil`,
            resource: { resourceType: 'Patient', id: 'evil' },
            request: { method: 'PUT' },
          },
        ],
      }),
    )
    const path = new URL(sub.endpoint).pathname
    const tries = [
      { path, headers: {} as Record<string, string> },
      { path, headers: { Authorization: 'Bearer not-the-secret' } },
      { path, headers: { Authorization: sub.headers.Authorization.slice(0, -1) } },
      { path: `${path.slice(0, -1)}${path.endsWith('A') ? 'B' : 'A'}`, headers: { Authorization: sub.headers.Authorization } },
      { path: '/fhir-notify/short', headers: { Authorization: sub.headers.Authorization } },
    ]
    for (const attempt of tries) {
      const res = await t.app.request(attempt.path, {
        method: 'POST',
        headers: { 'content-type': 'application/fhir+json', ...attempt.headers },
        body: bundle,
      })
      expect(res.status).toBe(401)
      expect(await res.json()).toMatchObject({ code: 'UNAUTHORIZED' })
    }
    expect(await currentRecords(t, created.body.id)).toEqual(before)
    expect((await sourceOf(created.body.id)).subscriptionStatus).toEqual(statusBefore)
    // The token and secret are stored encrypted; the API never shows them.
    const stored = await t.client.execute('SELECT token, secret FROM fhir_source_subscriptions')
    expect(String(stored.rows[0].token)).toMatch(/^enc:/)
    expect(String(stored.rows[0].secret)).toMatch(/^enc:/)
    expect(JSON.stringify(await sourceOf(created.body.id))).not.toContain(path.split('/').at(-1))
  })

  it('applies a duplicate notification once', async () => {
    const created = await handshaken()
    const [first, again] = await fx.change(patients(3)[2], { duplicate: true })
    expect(first.body).toMatchObject({ applied: 1, duplicate: false })
    expect(again).toMatchObject({ status: 200, body: { applied: 0, duplicate: true } })
    expect((await runsOf(t, created.body.id)).filter((r) => r.trigger === 'subscription')).toHaveLength(1)
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 1 })
  })

  it('a gap in the event numbers triggers a catch-up search by _lastUpdated that brings the missed change', async () => {
    const created = await handshaken()
    // The notification before the gap is applied 3 s after the server sent it (a late delivery):
    // the catch-up point is the server's time of that change less the margin, not when it was
    // applied, so the change the server made meanwhile (pat-4, whose notification is lost) is found.
    t.clock.set(new Date(Date.now() + 3_000).toISOString())
    await fx.change(patients(3)[2])
    const stamped = fx.resources.get('Patient/pat-3')?.meta as { lastUpdated: string }
    const changed = Date.parse(stamped.lastUpdated)
    const searchesBefore = fx.searches.length
    await fx.change(patients(4)[3], { skip: true })
    const [next] = await fx.change(patients(5)[4])
    expect(next.body).toMatchObject({ applied: 1, catchUp: true })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-4') ? true : undefined))
    const search = fx.searches.slice(searchesBefore)
    expect(search).toHaveLength(1)
    const bound = /^\/fhir\/Patient\?_lastUpdated=gt(.+)$/.exec(decodeURIComponent(search[0]))?.[1]
    expect(bound).toBeDefined()
    // The event's time and the resource's, whichever is later, less the minute's margin.
    expect(Date.parse(bound!)).toBeGreaterThanOrEqual(changed - CATCH_UP_MARGIN_MS)
    expect(Date.parse(bound!)).toBeLessThanOrEqual(changed - CATCH_UP_MARGIN_MS + 1_000)
    expect(await keys(created.body.id)).toEqual([
      'Patient/pat-1',
      'Patient/pat-2',
      'Patient/pat-3',
      'Patient/pat-4',
      'Patient/pat-5',
    ])
    const catchUp = await waitFor(async () => {
      const last = (await runsOf(t, created.body.id)).sort((a, b) => a.id - b.id).at(-1)
      return last?.status === 'syncing' ? undefined : last
    })
    // Incremental: it reads what changed within the margin too, and deletes nothing.
    expect(catchUp).toMatchObject({ trigger: 'subscription', status: 'success', rowsDeleted: 0 })
    expect((await subscriptionRow(created.body.id)).catch_up_from).toBeNull()
  })

  it('an event numbered below the count seen (a late copy, or a server counting again) is applied as the server holds it now, and owes a catch-up', async () => {
    const created = await handshaken()
    await fx.change(patients(3)[2])
    await fx.change(patients(4)[3])
    // The server lost its count: its next event is number 1 again, below the 2 seen. Its resource
    // is read again (not taken as sent, which may be older than what is stored) and applied.
    fx.restart(fx.only().id, 0)
    const readsBefore = fx.reads.length
    const [low] = await fx.change({ ...patients(5)[4], active: false })
    expect(low.body).toMatchObject({ applied: 1, duplicate: true, catchUp: true })
    expect(fx.reads.slice(readsBefore)).toEqual(['Patient/pat-5'])
    const stored = (await currentRecords(t, created.body.id)).find((r) => r.key === 'Patient/pat-5')
    expect(stored?.data.active).toBe(false)
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 2 })
    // A late copy of a removal: the server's 410 confirms it, and the record goes.
    fx.restart(fx.only().id, 0)
    fx.resources.delete('Patient/pat-3')
    await fx.remove('Patient', 'pat-3')
    expect(await keys(created.body.id)).not.toContain('Patient/pat-3')
    // The last event again (a retry) owes nothing and reads nothing.
    await caughtUp(created.body.id)
    fx.restart(fx.only().id, 2)
    const reads = fx.reads.length
    const [, again] = await fx.change({ ...patients(6)[5] }, { duplicate: true })
    expect(again.body).toMatchObject({ duplicate: true, catchUp: false })
    expect(fx.reads.length).toBe(reads)
  })

  it('a count beyond the events carried owes a catch-up, and moves the counter only to the events carried', async () => {
    const created = await handshaken()
    const post = notifier()
    fx.put(patients(3)[2])
    const res = await post(eventBundle({ since: 999_999_999_999, numbers: [1], entries: [] }))
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ duplicate: false, catchUp: true })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-3') ? true : undefined))
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 1 })
    // The next event in line (the fixture's count follows ours) is applied at once.
    fx.restart(fx.only().id, 1)
    const [next] = await fx.change(patients(4)[3])
    expect(next.body).toMatchObject({ applied: 1, duplicate: false, catchUp: false })
  })

  it('stores no resource without a valid type and id of its own: the server copy of the address is read instead', async () => {
    const created = await handshaken()
    const post = notifier()
    fx.put({ ...patients(3)[2], active: true })
    const res = await post(
      eventBundle({
        numbers: [1],
        entries: [
          { fullUrl: `${fx.baseUrl}/Patient/pat-3`, resource: { resourceType: 'Observation', status: 'final' } },
          { fullUrl: `${fx.baseUrl}/Patient/pat-1`, resource: { hello: 'not fhir' } },
          { resource: { resourceType: 'Patient', id: '../../etc/passwd' } },
          { fullUrl: `${fx.baseUrl}/Patient/..`, request: { method: 'PUT' } },
        ],
      }),
    )
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ applied: 2 })
    expect(fx.reads.sort()).toEqual(['Patient/pat-1', 'Patient/pat-3'])
    const records = await currentRecords(t, created.body.id)
    expect(records.map((r) => r.key).sort()).toEqual(['Patient/pat-1', 'Patient/pat-2', 'Patient/pat-3'])
    for (const r of records) expect(r.data).toMatchObject({ resourceType: 'Patient', id: r.key.split('/')[1] })
  })

  it('reads at most MAX_ID_ONLY_READS resources for one notification, each key once; more are left to the catch-up', async () => {
    const created = await handshaken({ payload: 'id-only' })
    const post = notifier()
    const many = Array.from({ length: MAX_ID_ONLY_READS + 1 }, (_, i) => ({ fullUrl: `${fx.baseUrl}/Patient/p${i}` }))
    const tooMany = await post(eventBundle({ numbers: [1], entries: many }))
    expect(await tooMany.json()).toMatchObject({ applied: 0, catchUp: true })
    expect(fx.reads).toEqual([])
    fx.put(patients(3)[2])
    const same = Array.from({ length: 50 }, () => ({ fullUrl: `${fx.baseUrl}/Patient/pat-3` }))
    const once = await post(eventBundle({ numbers: [2], entries: same }))
    expect(await once.json()).toMatchObject({ applied: 1 })
    expect(fx.reads).toEqual(['Patient/pat-3'])
    expect(await keys(created.body.id)).toContain('Patient/pat-3')
  })

  it('a notification whose resources cannot all be read still applies its removals and the resources it carries', async () => {
    const created = await handshaken({ payload: 'id-only' })
    const post = notifier()
    const many = Array.from({ length: MAX_ID_ONLY_READS + 1 }, (_, i) => ({ fullUrl: `${fx.baseUrl}/Patient/p${i}` }))
    const res = await post(
      eventBundle({
        numbers: [1],
        entries: [
          ...many,
          { fullUrl: `${fx.baseUrl}/Patient/pat-1`, request: { method: 'DELETE', url: 'Patient/pat-1' } },
          { fullUrl: `${fx.baseUrl}/Patient/pat-7`, resource: patients(7)[6], request: { method: 'PUT' } },
        ],
      }),
    )
    expect(await res.json()).toMatchObject({ applied: 2, catchUp: true })
    expect(fx.reads).toEqual([])
    expect(await keys(created.body.id)).toEqual(['Patient/pat-2', 'Patient/pat-7'])
  })

  it("an id-only notification delivered late moves the catch-up point to its event's time, not to the resource read now", async () => {
    const created = await handshaken({ payload: 'id-only' })
    const post = notifier()
    t.clock.set(new Date().toISOString())
    const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString()
    // Five minutes ago pat-4 changed (its notification is lost); pat-3 changed six minutes ago,
    // and again just now: the late notification of its first change reads its present version.
    fx.put(patients(4)[3])
    ;(fx.resources.get('Patient/pat-4')?.meta as { lastUpdated: string }).lastUpdated = minutesAgo(5)
    fx.put(patients(3)[2])
    const late = await post(
      eventBundle({ numbers: [1], times: [minutesAgo(6)], entries: [{ fullUrl: `${fx.baseUrl}/Patient/pat-3` }] }),
    )
    expect(await late.json()).toMatchObject({ applied: 1, catchUp: false })
    // The next notification shows the gap: the catch-up reads from before pat-4's change.
    const gap = await post(eventBundle({ numbers: [3], times: [minutesAgo(0)], entries: [] }))
    expect(await gap.json()).toMatchObject({ catchUp: true })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-4') ? true : undefined))
  })

  it('with a keyField, a removal keys the resource as its upserts did', async () => {
    const created = await live({}, { keyField: 'id' })
    await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
    expect(await keys(created.body.id)).toEqual(['pat-1', 'pat-2'])
    const [sent] = await fx.remove('Patient', 'pat-1')
    expect(sent.body).toMatchObject({ applied: 1 })
    expect(await keys(created.body.id)).toEqual(['pat-2'])
  })

  it('checks the sender before reading the body (401, not 413), and refuses a body that is not JSON (415)', async () => {
    const created = await handshaken()
    const sub = fx.only()
    const path = new URL(sub.endpoint).pathname
    const huge = 'x'.repeat(9 * 1024 * 1024)
    const stranger = await t.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/fhir+json', Authorization: 'Bearer wrong' },
      body: huge,
    })
    expect(stranger.status).toBe(401)
    const plain = await t.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', Authorization: sub.headers.Authorization },
      body: JSON.stringify(eventBundle({ numbers: [1], entries: [] })),
    })
    expect(plain.status).toBe(415)
    expect(await plain.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' })
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 0 })
    // A ping with no body may name any type.
    const ping = await t.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', Authorization: sub.headers.Authorization },
    })
    expect(ping.status).toBe(400)
  })

  it('a notification that owes a catch-up while one runs is caught up right after it, not at the next tick', async () => {
    const created = await handshaken()
    await fx.change(patients(3)[2])
    fx.state.searchDelayMs = 400
    await fx.change(patients(4)[3], { skip: true })
    const [first] = await fx.change(patients(5)[4])
    expect(first.body).toMatchObject({ catchUp: true })
    await waitFor(async () => ((await subscriptionRow(created.body.id)).catch_up_running ? true : undefined))
    // While that catch-up's search waits, another change is lost and the next one owes again.
    await fx.change(patients(6)[5], { skip: true })
    const [second] = await fx.change(patients(7)[6])
    expect(second.body).toMatchObject({ catchUp: true })
    fx.state.searchDelayMs = 0
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-6') ? true : undefined), 5_000)
    await waitFor(async () => {
      const row = await subscriptionRow(created.body.id)
      return row.catch_up_from === null && row.catch_up_running === null ? true : undefined
    })
  })

  it('a heartbeat beyond the last event seen (a restart, a lost notification) triggers a catch-up', async () => {
    const created = await handshaken()
    fx.put(patients(3)[2])
    fx.restart(fx.only().id, 4)
    const [beat] = await fx.heartbeat()
    expect(beat).toMatchObject({ status: 200, body: { type: 'heartbeat', catchUp: true } })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-3') ? true : undefined))
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 4 })
    // The same heartbeat again owes nothing.
    const [quiet] = await fx.heartbeat()
    expect(quiet.body).toMatchObject({ catchUp: false })
  })

  it('an error status triggers a catch-up, and the Subscription the server gave up is made again', async () => {
    const created = await handshaken()
    const old = fx.only().id
    fx.put(patients(3)[2])
    fx.setStatus(old, 'error')
    const [beat] = await fx.heartbeat()
    expect(beat.body).toMatchObject({ catchUp: true })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-3') ? true : undefined))
    await waitFor(async () => (fx.subscriptions.size === 1 && !fx.subscriptions.has(old) ? true : undefined))
    const remade = fx.only()
    await waitFor(async () => ((await sourceOf(created.body.id)).subscriptionStatus.id === remade.id ? true : undefined))
    expect(fx.server.requests.some((r) => r.method === 'DELETE' && r.url === `/fhir/Subscription/${old}`)).toBe(true)
  })

  it('classic criteria: an empty notification triggers the catch-up search', async () => {
    const created = await live({ topic: undefined, filters: undefined, criteria: 'Patient?active=true', payload: 'id-only' })
    expect(created.status).toBe(201)
    const sub = fx.only()
    expect(sub.resource).toMatchObject({ criteria: 'Patient?active=true', channel: { type: 'rest-hook' } })
    expect(sub.resource.meta).toBeUndefined()
    expect(sub.resource.channel.payload).toBeUndefined()
    const [sent] = await fx.change(patients(3)[2])
    expect(sent).toMatchObject({ status: 200, body: { catchUp: true } })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-3') ? true : undefined))
    // A sender that PUTs the resource at {endpoint}/{type}/{id} (HAPI's classic rest-hook with a payload).
    fx.put(patients(4)[3])
    const put = await t.app.request(`${new URL(sub.endpoint).pathname}/Patient/pat-4`, {
      method: 'PUT',
      headers: { 'content-type': 'application/fhir+json', Authorization: sub.headers.Authorization },
      body: JSON.stringify(patients(4)[3]),
    })
    expect(put.status).toBe(200)
    // The resource it carries is applied at once; the catch-up finds whatever else changed.
    expect(await put.json()).toMatchObject({ applied: 1, catchUp: true })
    expect(await keys(created.body.id)).toContain('Patient/pat-4')
    // A resource that is not the one addressed is not applied.
    const other = await t.app.request(`${new URL(sub.endpoint).pathname}/Patient/pat-9`, {
      method: 'PUT',
      headers: { 'content-type': 'application/fhir+json', Authorization: sub.headers.Authorization },
      body: JSON.stringify(patients(4)[3]),
    })
    expect(await other.json()).toMatchObject({ applied: 0, catchUp: true })
    // A DELETE at the resource's address removes it at once (once the catch-ups are done: a
    // removal that meets a running sync is refused, below).
    await caughtUp(created.body.id)
    fx.resources.delete('Patient/pat-4')
    const removed = await t.app.request(`${new URL(sub.endpoint).pathname}/Patient/pat-4`, {
      method: 'DELETE',
      headers: { Authorization: sub.headers.Authorization },
    })
    expect(await removed.json()).toMatchObject({ applied: 1 })
    expect(await keys(created.body.id)).not.toContain('Patient/pat-4')
    const wrong = await t.app.request(`${new URL(sub.endpoint).pathname}/Patient/pat-4`, { method: 'PUT', body: '{}' })
    expect(wrong.status).toBe(401)
  })

  it('a change of the subscription replaces the upstream one; deleting the source deletes it', async () => {
    const created = await handshaken()
    const first = fx.only()
    const config = { ...created.body.config, subscription: { topic: TOPIC, payload: 'id-only' } }
    const updated = await alice.put(`/api/datasources/${created.body.id}`, { config })
    expect(updated.status).toBe(200)
    const second = fx.only()
    expect(second.id).not.toBe(first.id)
    expect(second.payload).toBe('id-only')
    expect(second.endpoint).not.toBe(first.endpoint)
    expect(updated.body.subscriptionStatus).toMatchObject({ id: second.id })
    // The old endpoint is dead.
    const old = await t.app.request(new URL(first.endpoint).pathname, {
      method: 'POST',
      headers: { Authorization: first.headers.Authorization },
      body: '{}',
    })
    expect(old.status).toBe(401)
    // An unrelated change keeps it.
    await alice.put(`/api/datasources/${created.body.id}`, { config: { ...config, pageSize: 50 } })
    expect(fx.only().id).toBe(second.id)

    expect((await alice.delete(`/api/datasources/${created.body.id}`)).status).toBe(204)
    expect(fx.subscriptions.size).toBe(0)
    expect((await t.client.execute('SELECT count(*) AS n FROM fhir_source_subscriptions')).rows[0].n).toBe(0)
  })

  it('moving the source to another server deletes the Subscription on the old one, with the old credentials', async () => {
    const other = await startSubscriptionServer({ token: 'other-server-token' })
    try {
      const created = await handshaken()
      expect(fx.subscriptions.size).toBe(1)
      const moved = {
        ...created.body.config,
        baseUrl: other.baseUrl,
        authentication: { type: 'bearer', token: 'other-server-token' },
      }
      expect((await alice.put(`/api/datasources/${created.body.id}`, { config: moved })).status).toBe(200)
      // The old server accepts only its own token: the DELETE reached it with the credentials the Subscription was made with.
      expect(fx.subscriptions.size).toBe(0)
      expect(other.subscriptions.size).toBe(1)
      // Switched off there: the new server's Subscription goes, with the new server's credentials.
      const off = { ...moved, subscription: { ...moved.subscription, enabled: false } }
      expect((await alice.put(`/api/datasources/${created.body.id}`, { config: off })).status).toBe(200)
      expect(other.subscriptions.size).toBe(0)
    } finally {
      await other.close()
    }
  })

  it("deleting the panel deletes its live sources' Subscriptions at the next tick: the old URL answers 401", async () => {
    await handshaken()
    const first = fx.only()
    expect((await alice.delete(`/api/panels/${panelId}`)).status).toBe(204)
    const tick = await t.tick()
    expect(tick.fhirSubscriptions).toMatchObject({ removed: 1 })
    expect(fx.subscriptions.size).toBe(0)
    expect(fx.server.requests.some((r) => r.method === 'DELETE' && r.url === `/fhir/Subscription/${first.id}`)).toBe(true)
    expect((await t.client.execute('SELECT count(*) AS n FROM fhir_source_subscriptions')).rows[0].n).toBe(0)
    const old = await t.app.request(new URL(first.endpoint).pathname, {
      method: 'POST',
      headers: { Authorization: first.headers.Authorization },
      body: '{}',
    })
    expect(old.status).toBe(401)
    expect((await t.tick()).fhirSubscriptions).toMatchObject({ removed: 0 })
  })

  it('the same notification delivered twice at once is applied once, and a row.entered reaches the feed', async () => {
    const created = await handshaken()
    const view = await alice.post('/api/views', { name: 'Everyone', panelId })
    expect(view.status).toBe(201)
    const sub = fx.only()
    sub.events = 1
    const bundle = JSON.stringify(
      eventBundle({
        numbers: [1],
        entries: [
          {
            fullUrl: `${fx.baseUrl}/Patient/pat-9`,
            resource: { ...patients(9)[8] },
            request: { method: 'PUT', url: 'Patient/pat-9' },
          },
        ],
      }),
    )
    const path = new URL(sub.endpoint).pathname
    const post = () =>
      t.app.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/fhir+json', Authorization: sub.headers.Authorization },
        body: bundle,
      })
    const answers = await Promise.all([post(), post()])
    expect(answers.map((a) => a.status)).toEqual([200, 200])
    const receipts = await Promise.all(answers.map((a) => a.json()))
    expect(receipts.map((r) => r.duplicate).sort()).toEqual([false, true])
    expect(receipts.map((r) => r.applied).sort()).toEqual([0, 1])
    const written = (await runsOf(t, created.body.id)).filter((r) => r.trigger === 'subscription' && r.rowsWritten > 0)
    expect(written).toHaveLength(1)
    const feed = await alice.get(`/api/panels/${panelId}/events?after=0`)
    const entered = feed.body.events.filter((e: { type: string }) => e.type === 'row.entered')
    expect(entered.length).toBeGreaterThan(0)
    expect(JSON.stringify(entered)).toContain('pat-9')
  })

  it('a removal that meets a running sync is refused with 503 and its count not taken; sent again, it is applied', async () => {
    const created = await handshaken()
    const post = notifier()
    const removal = eventBundle({
      numbers: [1],
      entries: [{ fullUrl: `${fx.baseUrl}/Patient/pat-1`, request: { method: 'DELETE', url: 'Patient/pat-1' } }],
    })
    fx.state.searchDelayMs = 1_500
    const syncing = alice.post(`/api/datasources/${created.body.id}/sync`, {})
    await waitFor(async () => ((await runsOf(t, created.body.id)).some((r) => r.status === 'syncing') ? true : undefined))
    const refused = await post(removal)
    expect(refused.status).toBe(503)
    expect(refused.headers.get('retry-after')).toBe('5')
    expect(await refused.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE' })
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 0 })
    await syncing
    fx.state.searchDelayMs = 0
    await waitFor(async () => ((await runsOf(t, created.body.id)).every((r) => r.status !== 'syncing') ? true : undefined))
    const again = await post(removal)
    expect(await again.json()).toMatchObject({ applied: 1, duplicate: false })
    expect(await keys(created.body.id)).toEqual(['Patient/pat-2'])
  })

  it('a notification that meets the initial sync is acknowledged, and the catch-up after it brings the change', async () => {
    fx.state.searchDelayMs = 600
    const creating = live()
    await waitFor(async () => (fx.searches.length > 0 && fx.subscriptions.size === 1 ? true : undefined))
    await waitFor(async () => (fx.only().status === 'active' ? true : undefined))
    const [sent] = await fx.change(patients(3)[2])
    expect(sent).toMatchObject({ status: 200, body: { applied: 0, catchUp: true } })
    const created = await creating
    expect(created.body.syncStatus).toBe('success')
    fx.state.searchDelayMs = 0
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-3') ? true : undefined))
    expect(fx.searches.some((q) => q.includes('_lastUpdated=gt'))).toBe(true)
  })

  it('the claim on the event counter commits only from the count read: a stale claim fails its whole batch', async () => {
    const created = await handshaken()
    const id = created.body.id
    const now = t.clock.now().toISOString()
    await runBatch(t.deps.db, claimOnCounter({ sourceId: id, seen: 0, highest: 2, claim: 'first', now, owes: false }))
    // Another instance read the count before the first claim committed.
    const written = sql`UPDATE fhir_source_subscriptions SET error = 'rows written' WHERE data_source_id = ${id}`
    const stale = claimOnCounter({ sourceId: id, seen: 0, highest: 3, claim: 'second', now, owes: true })
    await expect(runBatch(t.deps.db, [written, ...stale])).rejects.toThrow()
    expect(await subscriptionRow(id)).toMatchObject({
      events_since_start: 2,
      last_claim: 'first',
      error: null,
      catch_up_from: null,
    })
    // Never backwards: a claim from the right count with a lower number keeps the count.
    await runBatch(t.deps.db, claimOnCounter({ sourceId: id, seen: 2, highest: 1, claim: 'third', now, owes: false }))
    expect(await subscriptionRow(id)).toMatchObject({ events_since_start: 2, last_claim: 'third' })
  })

  it('a heartbeat below the count seen (the server counts again from the start) takes its count and catches up', async () => {
    const created = await handshaken()
    await fx.change(patients(3)[2])
    await fx.change(patients(4)[3])
    fx.put(patients(5)[4])
    fx.restart(fx.only().id, 0)
    const [beat] = await fx.heartbeat()
    expect(beat.body).toMatchObject({ type: 'heartbeat', catchUp: true })
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-5') ? true : undefined))
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ eventsSinceStart: 0 })
    // The next event, number 1, is applied at once.
    const [next] = await fx.change(patients(6)[5])
    expect(next.body).toMatchObject({ applied: 1, duplicate: false, catchUp: false })
  })

  it('the maintenance tick re-makes a Subscription the server dropped, and catches up', async () => {
    const created = await handshaken({ heartbeatSeconds: 10 })
    const old = fx.only().id
    fx.drop(old)
    fx.put(patients(3)[2])
    // Quiet for less than two heartbeat periods: nothing is read.
    t.clock.advance(15_000)
    const calm = await t.tick()
    expect(calm.fhirSubscriptions).toEqual({ caughtUp: 0, checked: 0, remade: 0, removed: 0 })
    t.clock.advance(10_000)
    const tick = await t.tick()
    // The catch-up is run by the tick, or by the receiver of the new handshake when it comes first.
    expect(tick.fhirSubscriptions).toMatchObject({ checked: 1, remade: 1 })
    const remade = fx.only()
    expect(remade.id).not.toBe(old)
    await waitFor(async () => ((await keys(created.body.id)).includes('Patient/pat-3') ? true : undefined))
    expect((await subscriptionRow(created.body.id)).catch_up_from).toBeNull()
    expect((await sourceOf(created.body.id)).subscriptionStatus).toMatchObject({ id: remade.id, eventsSinceStart: 0 })
  })

  it('a catch-up whose run died is given back as owed and run by the tick', async () => {
    const created = await handshaken()
    fx.put(patients(3)[2])
    // As a crash leaves it: taken (running from an instant), no run holding the source.
    await t.client.execute({
      sql: `UPDATE fhir_source_subscriptions SET catch_up_running = '2025-01-01T00:00:00.000Z', catch_up_taken_at = ?, updated_at = ?
        WHERE data_source_id = ?`,
      args: [t.clock.now().toISOString(), t.clock.now().toISOString(), created.body.id],
    })
    const early = await t.tick()
    expect(early.fhirSubscriptions.caughtUp).toBe(0)
    t.clock.advance(61_000)
    // A heartbeat just before the tick (the source hears from its server every minute) moves the
    // row's updated_at, not when the catch-up was taken.
    const [beat] = await fx.heartbeat()
    expect(beat.status).toBe(200)
    const tick = await t.tick()
    expect(tick.fhirSubscriptions.caughtUp).toBe(1)
    expect(fx.searches.at(-1)).toBe(`/fhir/Patient?_lastUpdated=${encodeURIComponent('gt2025-01-01T00:00:00.000Z')}`)
    expect(await keys(created.body.id)).toContain('Patient/pat-3')
    expect(await subscriptionRow(created.body.id)).toMatchObject({ catch_up_from: null, catch_up_running: null })
  })

  it('a FHIR server that refuses the Subscription leaves the source with the error shown; the tick makes it later', async () => {
    const created = await createSource(
      alice,
      panelId,
      { baseUrl: fx.baseUrl, resourceType: 'Patient', subscription: { topic: TOPIC, payload: 'id-only' } },
      'fhir',
    )
    // No credentials: the server answers 401 to the search and the Subscription alike.
    expect(created.status).toBe(201)
    expect(created.body.subscriptionStatus).toMatchObject({ id: null, status: 'error', error: expect.stringContaining('401') })
    expect(fx.subscriptions.size).toBe(0)
    const fixed = await alice.put(`/api/datasources/${created.body.id}`, {
      config: { ...created.body.config, authentication: { type: 'bearer', token: UPSTREAM_TOKEN } },
    })
    expect(fixed.body.subscriptionStatus).toMatchObject({ id: fx.only().id, status: expect.stringMatching(/requested|active/) })
    expect(fixed.body.subscriptionStatus.error).toBeUndefined()
  })

  it('validates config.subscription field by field', async () => {
    const both = await live({ criteria: 'Patient?active=true' })
    expect(both.status).toBe(400)
    expect(both.body.details).toContainEqual({
      path: 'config.subscription.criteria',
      message: expect.stringContaining('exactly one'),
    })
    const neither = await live({ topic: undefined, filters: undefined, payload: 'everything' })
    expect(neither.status).toBe(400)
    expect(neither.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'config.subscription.payload',
      'config.subscription.topic',
    ])
    const bulk = await createSource(
      alice,
      panelId,
      {
        baseUrl: fx.baseUrl,
        mode: 'bulk',
        bulk: { level: 'system', since: 'none' },
        subscription: { topic: TOPIC, payload: 'id-only' },
      },
      'fhir',
    )
    expect(bulk.body.details).toContainEqual({ path: 'config.subscription', message: 'only for mode search' })
    expect(fx.subscriptions.size).toBe(0)
  })

  it('without PUBLIC_BASE_URL a subscription source is a 400 naming it', async () => {
    t = await makeTestApp()
    alice = clientFor(t.app, 'tenant-a', 'alice')
    panelId = (await createPanel(alice)).id
    const res = await live()
    expect(res.status).toBe(400)
    expect(res.body.message).toContain('PUBLIC_BASE_URL')
    expect(res.body.details).toEqual([{ path: 'config.subscription', message: expect.stringContaining('PUBLIC_BASE_URL') }])
    expect(fx.subscriptions.size).toBe(0)
  })
})

/** Posts a notification Bundle to the one Subscription's endpoint with its channel header. */
const notifier = () => {
  const sub = fx.only()
  return (bundle: unknown) =>
    t.app.request(new URL(sub.endpoint).pathname, {
      method: 'POST',
      headers: { 'content-type': 'application/fhir+json', Authorization: sub.headers.Authorization },
      body: JSON.stringify(bundle),
    })
}

/** Waits until no catch-up is owed or running for the source. */
const caughtUp = (id: number) =>
  waitFor(async () => {
    const row = await subscriptionRow(id)
    return row.catch_up_from === null && row.catch_up_running === null ? true : undefined
  })

const subscriptionRow = async (id: number) =>
  (await t.client.execute({ sql: 'SELECT * FROM fhir_source_subscriptions WHERE data_source_id = ?', args: [id] }))
    .rows[0] as Record<string, unknown>
