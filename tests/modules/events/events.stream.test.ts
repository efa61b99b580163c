import { sql } from 'drizzle-orm'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../src/app.ts'
import { createLocalBus } from '../../../src/live/bus.ts'
import { openStreams } from '../../../src/modules/events/events.feed.ts'
import { onTarget, REMOTE, SKIP } from '../../helpers/target.ts'
import { append, type EventsWorld, eventsWorld, headOf, openStream, panelEvents, type Stream, seqFrame } from './fixtures.ts'

/**
 * Server-sent events (docs/live.md "Server-sent events"). In-process the test's appends wake the
 * app's bus like a writer's commit; on the workers and deno targets the test writes to the
 * server's database from outside, so the server's streams find the events by polling the log
 * (EVENTS_POLL_INTERVAL_MS, 1 s): the bounds below allow for that.
 */
const WITHIN = REMOTE ? 3_000 : 1_000

let w: EventsWorld
const open: Stream[] = []
const stream = async (...args: Parameters<typeof openStream> extends [unknown, ...infer R] ? R : never) => {
  const s = await openStream(w.t, ...args)
  open.push(s)
  return s
}

beforeAll(async () => {
  w = await eventsWorld()
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

/** The `stream` access records of `userId` on `viewId`, once there is one (or after 3 s). */
async function streamRecords(userId: string, viewId: number) {
  const deadline = Date.now() + 3000
  let rows: Record<string, unknown>[] = []
  while (Date.now() < deadline) {
    rows = (
      await w.t.client.execute({
        sql: "SELECT * FROM access_records WHERE action = 'stream' AND user_id = ? AND view_id = ?",
        args: [userId, viewId],
      })
    ).rows
    if (rows.length > 0) break
    await new Promise((r) => setTimeout(r, 50))
  }
  return rows
}

describe('GET /api/events with Accept: text/event-stream', () => {
  it('streams an event committed after connecting, as id/event/data frames', async () => {
    const s = await stream(w.alice, '/api/events')
    expect(s.res.status).toBe(200)
    expect(s.res.headers.get('content-type')).toContain('text/event-stream')
    await s.next((f) => f.comment === 'open')
    const seq = (await headOf(w.t, 'tenant-a')) + 1
    const t0 = Date.now()
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 1, 42))
    const [frame] = (await s.next(seqFrame(seq), WITHIN)).filter((f) => f.data)
    expect(Date.now() - t0).toBeLessThan(WITHIN)
    expect(frame.event).toBe('panel.rows_changed')
    expect(JSON.parse(frame.data!)).toEqual({
      id: String(seq),
      seq,
      type: 'panel.rows_changed',
      tenantId: 'tenant-a',
      occurredAt: '2026-01-01T12:00:00.000Z',
      panelId: w.panelId,
      data: { n: 42 },
    })
  })

  it('sends only what the caller may read, narrowed by the query', async () => {
    const start = await headOf(w.t, 'tenant-a')
    const bob = await stream(w.bob, `/api/events?after=${start}&types=row.entered`)
    const nina = await stream(w.nina, `/api/views/${w.nursesViewId}/events?after=${start}`)
    const eve = await stream(w.eve, `/api/events?after=0`)
    await append(w.t, 'tenant-a', [
      { type: 'row.entered', panelId: w.panelId, viewId: w.privateViewId, data: { tag: 'private' } },
      { type: 'row.left', panelId: w.panelId, viewId: w.publishedViewId, data: { tag: 'published-left' } },
      { type: 'row.entered', panelId: w.panelId, viewId: w.nursesViewId, data: { tag: 'nurses' } },
      { type: 'panel.rows_changed', panelId: w.panelId, data: { tag: 'panel' } },
      { type: 'row.entered', panelId: w.panelId, viewId: w.publishedViewId, data: { tag: 'published' } },
    ])
    await bob.next(seqFrame(start + 5), WITHIN)
    expect(bob.events().map((e) => e.data.tag)).toEqual(['published'])
    await nina.next(seqFrame(start + 3), WITHIN)
    // The feed has read past the rest: a ping later would move nina's id to start + 5.
    expect(nina.events().map((e) => e.data.tag)).toEqual(['nurses'])
    await append(w.t, 'tenant-b', [{ type: 'panel.rows_changed', panelId: w.evePanelId, data: { tag: 'eve' } }])
    await eve.next((f) => f.data?.includes('"eve"') === true, WITHIN)
    expect(eve.events().every((e) => e.tenantId === 'tenant-b')).toBe(true)
    expect(eve.events().map((e) => e.data.tag)).not.toContain('published')
  })

  it('resumes with Last-Event-ID: nothing lost or repeated across a disconnect; the header wins over after', async () => {
    const start = await headOf(w.t, 'tenant-a')
    const first = await stream(w.alice, `/api/panels/${w.panelId}/events?after=${start}`)
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 3, 1))
    await first.next(seqFrame(start + 3), WITHIN)
    await first.close()
    // Written while nobody listens, in two commits.
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 2, 4))
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 2, 6))
    const again = await stream(w.alice, `/api/panels/${w.panelId}/events?after=${start}`, {
      'last-event-id': String(start + 3),
    })
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 1, 8))
    await again.next(seqFrame(start + 8), WITHIN)
    const ns = [...first.events(), ...again.events()].map((e) => e.data.n)
    expect(ns).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(again.events().map((e) => e.seq)).toEqual([start + 4, start + 5, start + 6, start + 7, start + 8])
  })

  it('without a cursor, starts at the head: only events committed from now on', async () => {
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 1, 100))
    const s = await stream(w.alice, `/api/panels/${w.panelId}/events`)
    await s.next((f) => f.comment === 'open')
    const seq = (await headOf(w.t, 'tenant-a')) + 1
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 1, 101))
    await s.next(seqFrame(seq), WITHIN)
    expect(s.events().map((e) => e.data.n)).toEqual([101])
  })

  it('answers 400 for a bad Last-Event-ID and 404 before streaming a view the caller cannot read', async () => {
    const bad = await stream(w.alice, '/api/events', { 'last-event-id': 'x1' })
    expect(bad.res.status).toBe(400)
    const hidden = await stream(w.bob, `/api/views/${w.privateViewId}/events`)
    expect(hidden.res.status).toBe(404)
    expect(await hidden.res.json()).toMatchObject({ code: 'NOT_FOUND' })
  })

  it('ends a view stream when its caller may no longer read the view', async () => {
    const view = (await w.alice.post('/api/views', { name: 'Short-lived', panelId: w.panelId })).body
    await w.alice.post(`/api/views/${view.id}/publish`, { publishConfig: { permissions: ['read'], userGroups: [] } })
    const s = await stream(w.bob, `/api/views/${view.id}/events`)
    await s.next((f) => f.comment === 'open')
    await w.alice.post(`/api/views/${view.id}/unpublish`, {})
    if (REMOTE) await append(w.t, 'tenant-a', panelEvents(w.panelId, 1)) // the server polls: no wake-up from here
    const deadline = Date.now() + WITHIN + 1000
    while (!s.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(s.ended).toBe(true)
    expect(s.events().filter((e) => e.viewId === view.id)).toEqual([])
  })
})

describe('stream lifecycle (in-process)', () => {
  it.skipIf(onTarget(['workers', 'deno'], SKIP.feedState))(
    'leaves the feed when the client goes away or the service stops',
    async () => {
      const a = await stream(w.alice, '/api/events')
      const b = await stream(w.bob, '/api/events')
      await a.next((f) => f.comment === 'open')
      await b.next((f) => f.comment === 'open')
      expect(openStreams(w.t.deps, 'tenant-a')).toBe(2)
      await a.close()
      expect(openStreams(w.t.deps, 'tenant-a')).toBe(1)
      await b.close()
      expect(openStreams(w.t.deps, 'tenant-a')).toBe(0)

      const t = (await eventsWorld()).t
      const s = await openStream(t, { tenantId: 'tenant-a', userId: 'alice' } as never, '/api/events')
      open.push(s)
      await s.next((f) => f.comment === 'open')
      await t.deps.settle()
      const deadline = Date.now() + 1000
      while (!s.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
      expect(s.ended).toBe(true)
      expect(openStreams(t.deps, 'tenant-a')).toBe(0)
      expect((await openStream(t, { tenantId: 'tenant-a', userId: 'alice' } as never, '/api/events')).res.status).toBe(200)
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'probes every stream each poll interval where the runtime sees a close only on a failed write (Workers)',
    async () => {
      // Its own bus, so its tenant feed is not the one the other app's streams share.
      const deps = { ...w.t.deps, live: createLocalBus(), streamCloseSeenOnWrite: true }
      const probed = await openStream({ ...w.t, app: createApp(() => deps) }, w.alice, '/api/events')
      open.push(probed)
      const plain = await stream(w.alice, '/api/events')
      await probed.next((f) => f.comment === 'open')
      await probed.next((f) => f.comment === '', 2000)
      await probed.next((f) => f.comment === '', 2000)
      // Node sees the socket close: no probes there.
      expect(plain.frames.filter((f) => f.comment !== 'open')).toEqual([])
    },
  )

  it('records the stream as a read of the audit (action stream, rows sent)', async () => {
    const start = await headOf(w.t, 'tenant-a')
    const s = await stream(w.bob, `/api/views/${w.publishedViewId}/events?after=${start}`)
    await append(w.t, 'tenant-a', [
      { type: 'row.entered', panelId: w.panelId, viewId: w.publishedViewId, data: { rowId: 1 } },
      { type: 'row.entered', panelId: w.panelId, viewId: w.publishedViewId, data: { rowId: 2 } },
      { type: 'view.updated', panelId: w.panelId, viewId: w.publishedViewId, data: {} },
    ])
    await s.next(seqFrame(start + 3), WITHIN)
    await s.close()
    const rows = await streamRecords('bob', w.publishedViewId)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ outcome: 'success', row_count: 2, panel_id: w.panelId, status: 200 })
  })

  it('ends a stream whose request signal aborts, though its body is not cancelled, and records it', async () => {
    const s = await stream(w.ada, `/api/views/${w.publishedViewId}/events`)
    await s.next((f) => f.comment === 'open')
    s.abortRequest()
    const rows = await streamRecords('ada', w.publishedViewId)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ outcome: 'success', row_count: 0, panel_id: w.panelId, status: 200 })
    const deadline = Date.now() + 1000
    while (!s.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    expect(s.ended).toBe(true)
  })
})

describe('pings and a cursor older than the retained log (apps of their own)', () => {
  // Its own app (another environment): on the remote targets that restarts the server, so it comes last.
  it('sends a ": ping" comment at EVENTS_PING_INTERVAL_MS', async () => {
    const pinging = await eventsWorld({ EVENTS_PING_INTERVAL_MS: '100' })
    const s = await openStream(pinging.t, pinging.alice, '/api/events')
    open.push(s)
    const t0 = Date.now()
    await s.next((f) => f.comment === 'ping', 2000)
    await s.next((f) => f.comment === 'ping', 2000)
    expect(Date.now() - t0).toBeLessThan(1500)
  })

  it('answers 410 CURSOR_EXPIRED with details.oldestSeq, for the page and for the stream', async () => {
    const x = await eventsWorld()
    await append(x.t, 'tenant-a', panelEvents(x.panelId, 5))
    const head = await headOf(x.t, 'tenant-a')
    await x.t.deps.db.run(sql`DELETE FROM events WHERE tenant_id = 'tenant-a' AND seq <= ${head - 2}`)
    const oldest = head - 1
    const page = await x.alice.get(`/api/events?after=${oldest - 2}`)
    expect(page.status).toBe(410)
    expect(page.body).toMatchObject({ statusCode: 410, code: 'CURSOR_EXPIRED', details: { oldestSeq: oldest } })
    // The cursor just before the oldest retained event is still good.
    const ok = await x.alice.get(`/api/events?after=${oldest - 1}`)
    expect(ok.status).toBe(200)
    expect(ok.body.events[0].seq).toBe(oldest)
    const scoped = await x.alice.get(`/api/panels/${x.panelId}/events?after=1`)
    expect(scoped.status).toBe(410)
    const s = await openStream(x.t, x.alice, '/api/events', { 'last-event-id': '1' })
    expect(s.res.status).toBe(410)
    expect(await s.res.json()).toMatchObject({ code: 'CURSOR_EXPIRED', details: { oldestSeq: oldest } })
    // Everything pruned: the next seq to come is the oldest, and the head is still a good cursor.
    await x.t.deps.db.run(sql`DELETE FROM events WHERE tenant_id = 'tenant-a'`)
    const gone = await x.alice.get(`/api/events?after=${head - 1}`)
    expect(gone.body).toMatchObject({ code: 'CURSOR_EXPIRED', details: { oldestSeq: head + 1 } })
    expect((await x.alice.get(`/api/events?after=${head}`)).body).toEqual({ events: [], lastSeq: head, hasMore: false })
  })
})
