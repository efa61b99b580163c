import type { EnvRecord } from '../../../src/config.ts'
import { appendEvents, type NewEvent } from '../../../src/rowstore/events.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

/**
 * A tenant with two users and an admin, another tenant, panels and views of each kind, for the
 * readers of the change feed (docs/live.md):
 *   alice (tenant-a) owns `panelId` with views `privateViewId` (unpublished), `publishedViewId`
 *   (published to everyone) and `nursesViewId` (published to the group "nurses");
 *   bob (tenant-a) owns `bobPanelId`; nina (tenant-a, group nurses); ada (tenant-a, admin);
 *   eve (tenant-b) owns `evePanelId` with `eveViewId` (published).
 */
export interface EventsWorld {
  t: TestApp
  alice: TestClient
  bob: TestClient
  nina: TestClient
  ada: TestClient
  eve: TestClient
  panelId: number
  bobPanelId: number
  evePanelId: number
  privateViewId: number
  publishedViewId: number
  nursesViewId: number
  eveViewId: number
}

export async function eventsWorld(env: EnvRecord = {}): Promise<EventsWorld> {
  const t = await makeTestApp({ env: { EVENTS_PING_INTERVAL_MS: '60000', ...env } })
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  const bob = clientFor(t.app, 'tenant-a', 'bob')
  const nina = clientFor(t.app, 'tenant-a', 'nina', { groups: ['nurses'] })
  const ada = clientFor(t.app, 'tenant-a', 'ada', { role: 'admin' })
  const eve = clientFor(t.app, 'tenant-b', 'eve')
  const panel = async (c: TestClient, name: string) => {
    const res = await c.post('/api/panels', { name, tenantId: c.tenantId, userId: c.userId })
    if (res.status !== 201) throw new Error(`panel: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.id as number
  }
  const view = async (c: TestClient, panelId: number, name: string, publishConfig?: Record<string, unknown>) => {
    const res = await c.post('/api/views', { name, panelId })
    if (res.status !== 201) throw new Error(`view: ${res.status} ${JSON.stringify(res.body)}`)
    if (publishConfig) {
      const config = { permissions: ['read'], userGroups: [], ...publishConfig }
      const pub = await c.post(`/api/views/${res.body.id}/publish`, { publishConfig: config })
      if (pub.status !== 200) throw new Error(`publish: ${pub.status} ${JSON.stringify(pub.body)}`)
    }
    return res.body.id as number
  }
  const panelId = await panel(alice, 'Diabetes')
  const evePanelId = await panel(eve, 'Other tenant')
  return {
    t,
    alice,
    bob,
    nina,
    ada,
    eve,
    panelId,
    bobPanelId: await panel(bob, 'Cardio'),
    evePanelId,
    privateViewId: await view(alice, panelId, 'Private'),
    publishedViewId: await view(alice, panelId, 'Shared', {}),
    nursesViewId: await view(alice, panelId, 'Nurses only', { userGroups: ['nurses'] }),
    eveViewId: await view(eve, evePanelId, 'Eve shared', {}),
  }
}

/** Appends events in one batch, as a writer does, then wakes the streams (deps.live). */
export async function append(t: TestApp, tenantId: string, list: NewEvent[], at = '2026-01-01T12:00:00.000Z') {
  const statements = appendEvents(tenantId, list, at)
  await t.deps.db.batch(statements.map((s) => t.deps.db.run(s)) as never)
  t.deps.live.committed(tenantId)
}

/** `n` panel-scoped events of `panelId` numbered in `data.n` from `from`. */
export const panelEvents = (panelId: number, n: number, from = 1): NewEvent[] =>
  Array.from({ length: n }, (_, i) => ({ type: 'panel.rows_changed', panelId, data: { n: from + i } }))

/** The tenant's last seq now. */
export async function headOf(t: TestApp, tenantId: string): Promise<number> {
  const { rows } = await t.client.execute({ sql: 'SELECT last_seq FROM event_sequences WHERE tenant_id = ?', args: [tenantId] })
  return rows.length ? Number(rows[0].last_seq) : 0
}

/** One frame of a server-sent event stream. */
export interface Frame {
  id?: string
  event?: string
  data?: string
  comment?: string
}

/**
 * An open server-sent event stream read frame by frame. `next(predicate, ms)` resolves with the
 * frames up to and including the first matching one, or rejects after `ms`.
 */
export async function openStream(t: TestApp, c: TestClient, path: string, headers: Record<string, string> = {}) {
  const controller = new AbortController()
  const res = await t.app.request(path, {
    headers: {
      ...(await authHeaders(c.tenantId, c.userId, roleOf(c))),
      accept: 'text/event-stream',
      ...headers,
    },
    signal: controller.signal,
  })
  const frames: Frame[] = []
  let buffer = ''
  let ended = false
  let waiter: (() => void) | undefined
  const reader = res.status === 200 ? res.body?.getReader() : undefined
  const decoder = new TextDecoder()
  const pump = (async () => {
    if (!reader) return
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let at = buffer.indexOf('\n\n')
        while (at >= 0) {
          frames.push(parseFrame(buffer.slice(0, at)))
          buffer = buffer.slice(at + 2)
          at = buffer.indexOf('\n\n')
        }
        waiter?.()
      }
    } catch {
      // cancelled
    } finally {
      ended = true
      waiter?.()
    }
  })()
  let seen = 0
  return {
    res,
    frames,
    get ended() {
      return ended
    },
    /** Frames since the last call up to the first that matches; rejects after `ms`. */
    async next(match: (f: Frame) => boolean, ms = 3000): Promise<Frame[]> {
      const deadline = Date.now() + ms
      for (;;) {
        const i = frames.findIndex((f, j) => j >= seen && match(f))
        if (i >= 0) {
          const out = frames.slice(seen, i + 1)
          seen = i + 1
          return out
        }
        if (ended) throw new Error(`stream ended before a matching frame; frames: ${JSON.stringify(frames.slice(seen))}`)
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`no matching frame within ${ms} ms; frames: ${JSON.stringify(frames.slice(seen))}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 50))
          waiter = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
    },
    /** Data frames received so far, parsed. */
    events: () => frames.filter((f) => f.data !== undefined).map((f) => JSON.parse(f.data!)),
    async close() {
      await reader?.cancel().catch(() => {})
      controller.abort()
      await pump
    },
    /**
     * Aborts the request's signal without cancelling the body: in-process, a runtime that tells a
     * disconnect only there; on the servers, a closed connection.
     */
    abortRequest: () => controller.abort(),
  }
}

export type Stream = Awaited<ReturnType<typeof openStream>>

const roleOf = (c: TestClient) => (c.userId === 'ada' ? { role: 'admin' } : c.userId === 'nina' ? { groups: ['nurses'] } : {})

function parseFrame(text: string): Frame {
  const frame: Frame = {}
  for (const line of text.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1).trim()
    else if (line.startsWith('id: ')) frame.id = line.slice(4)
    else if (line.startsWith('event: ')) frame.event = line.slice(7)
    else if (line.startsWith('data: ')) frame.data = line.slice(6)
  }
  return frame
}

/** Matches the data frame of the event with this seq. */
export const seqFrame = (seq: number) => (f: Frame) => f.id === String(seq) && f.data !== undefined
