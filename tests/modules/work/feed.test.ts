import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clientFor } from '../../helpers/http.ts'
import type { FixtureServer } from '../../helpers/servers.ts'
import { REMOTE } from '../../helpers/target.ts'
import { headOf, openStream, seqFrame } from '../events/fixtures.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'
import { bodies, startReceiver, step } from '../subscriptions/fixtures.ts'

/**
 * What else sees the work (WORKLIST.md §4; docs/worklist.md "Events", docs/live.md): a work change's
 * `row.work_updated` reaches the log, the streams and outbound webhooks of those who may read it
 * (the panel's owner and admins), and views that show or filter on a virtual column move in the
 * same commit.
 */

const WITHIN = REMOTE ? 3_000 : 1_000

let w: RowsWorld
let receiver: FixtureServer
let showsStatus: number
let openOnly: number
let plain: number
beforeAll(async () => {
  w = await rowsWorld()
  receiver = await startReceiver()
  const view = async (body: Record<string, unknown>) => {
    const res = await w.alice.post('/api/views', { panelId: w.panelId, ...body })
    if (res.status !== 201) throw new Error(`view: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.id as number
  }
  showsStatus = await view({ name: 'Shows status', config: { columns: ['Name', '_status'] } })
  openOnly = await view({ name: 'Open only', filters: [{ columnTitle: '_status', operator: 'equals', value: 'open' }] })
  plain = await view({ name: 'No virtual column', config: { columns: ['Name', 'City'] } })
  // Every view read once, so each has its membership before the work changes below.
  for (const id of [showsStatus, openOnly, plain]) expect((await w.alice.get(`/api/views/${id}/rows`)).status).toBe(200)
})
afterAll(async () => {
  await receiver.close()
  await w.server.close()
})

const row = (id: number) => `/api/panels/${w.panelId}/rows/${id}`

interface Ev {
  seq: number
  type: string
  panelId?: number
  viewId?: number
  dataSourceId?: number
  data: Record<string, unknown>
}

async function eventsAfter(client: RowsWorld['alice'], after: number, types?: string): Promise<Ev[]> {
  const res = await client.get(`/api/events?after=${after}${types ? `&types=${types}` : ''}`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body.events
}

describe('row.work_updated in the feed', () => {
  it('is read by the owner (log and stream) and an admin, not by another user of the tenant', async () => {
    const start = await headOf(w.t, 'tenant-a')
    const stream = await openStream(w.t, w.alice, `/api/events?after=${start}&types=row.work_updated`)
    try {
      const patch = await w.alice.patch(`${row(w.ids.p1)}/work`, { status: 'in_progress' }, { 'if-match': '"0"' })
      expect(patch.status, JSON.stringify(patch.body)).toBe(200)
      const claim = await w.alice.post(`${row(w.ids.p2)}/claim`, { leaseSeconds: 600 })
      expect(claim.status, JSON.stringify(claim.body)).toBe(200)

      const logged = await eventsAfter(w.alice, start, 'row.work_updated')
      expect(logged).toHaveLength(2)
      const [patched, claimed] = logged
      expect(patched).toMatchObject({
        type: 'row.work_updated',
        panelId: w.panelId,
        dataSourceId: w.sourceId,
        data: {
          rowId: w.ids.p1,
          key: 'p1',
          panelId: w.panelId,
          by: 'alice',
          cause: 'patch',
          changed: { status: { from: 'open', to: 'in_progress' } },
          work: { status: 'in_progress', version: 1, updatedBy: 'alice' },
        },
      })
      expect(patched).not.toHaveProperty('viewId')
      // The answer's _work is the event's work, in the WorkState shape of GET (nothing more).
      expect(patch.body._work).toEqual(patched.data.work)
      expect(claim.body._work).toEqual(claimed.data.work)
      expect(Object.keys(patch.body._work).sort()).toEqual(Object.keys((await w.alice.get(row(w.ids.p1))).body._work).sort())
      expect(claimed.data).toMatchObject({
        rowId: w.ids.p2,
        key: 'p2',
        cause: 'claim',
        changed: { assignee: { from: null, to: 'alice' } },
        work: { assignee: 'alice', version: 1 },
      })
      expect(Object.keys(claimed.data.changed as object).sort()).toEqual(['assignee', 'claimExpiresAt', 'claimedAt'])

      // The stream carries the same events, as id/event/data frames.
      const frames = (await stream.next(seqFrame(claimed.seq), WITHIN)).filter((f) => f.data !== undefined)
      expect(frames.map((f) => [f.id, f.event])).toEqual([
        [String(patched.seq), 'row.work_updated'],
        [String(claimed.seq), 'row.work_updated'],
      ])
      expect(JSON.parse(frames[0].data!)).toEqual(patched)

      const admin = clientFor(w.t.app, 'tenant-a', 'root', { role: 'admin' })
      expect((await eventsAfter(admin, start, 'row.work_updated')).map((e) => e.seq)).toEqual([patched.seq, claimed.seq])
      // Bob owns nothing: neither the log nor a stream of his shows them (and a panel path is a 404).
      expect(await eventsAfter(w.bob, start)).toEqual([])
      expect((await w.bob.get(`/api/panels/${w.panelId}/events?after=${start}`)).status).toBe(404)
      expect(await eventsAfter(w.eve, 0, 'row.work_updated')).toEqual([])
    } finally {
      await stream.close()
    }
  })

  it('is a row read in the audit of a page of events', async () => {
    const start = await headOf(w.t, 'tenant-a')
    await w.alice.patch(`${row(w.ids.p3)}/work`, { dueAt: '2031-01-01T00:00:00Z' })
    const page = await eventsAfter(w.alice, start, 'row.work_updated')
    expect(page).toHaveLength(1)
    const { rows } = await w.t.client.execute({
      sql: "SELECT row_count FROM access_records WHERE tenant_id = 'tenant-a' AND user_id = 'alice' AND path = '/api/events' ORDER BY id DESC LIMIT 1",
      args: [],
    })
    expect(Number(rows[0].row_count)).toBe(1)
  })

  it('is delivered by an outbound webhook subscribed to its type, signed, and only that type', async () => {
    const sub = await w.alice.post('/api/subscriptions', {
      url: `${receiver.url}/hook`,
      events: ['row.work_updated'],
      panelId: w.panelId,
    })
    expect(sub.status, JSON.stringify(sub.body)).toBe(201)
    const bobs = await w.bob.post('/api/subscriptions', { url: `${receiver.url}/bob`, events: ['*'] })
    expect(bobs.status, JSON.stringify(bobs.body)).toBe(201)
    // A status change moves rows in alice's views too (row.updated, row.left): not of this subscription's types.
    const res = await w.alice.patch(`${row(w.ids.p4)}/work`, { status: 'done' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    await step(w.t.deps)
    const deadline = Date.now() + 3000
    while (receiver.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    await step(w.t.deps)
    const got = bodies(receiver)
    expect(got.map((e) => e.type)).toEqual(['row.work_updated'])
    expect(receiver.requests.map((r) => r.url)).toEqual(['/hook'])
    expect(got[0]).toMatchObject({
      panelId: w.panelId,
      data: { rowId: w.ids.p4, key: 'p4', cause: 'patch', changed: { status: { from: 'open', to: 'done' } } },
    })
    expect(receiver.requests[0].headers['x-event-type']).toBe('row.work_updated')
    expect(receiver.requests[0].headers['x-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/)
    await w.alice.delete(`/api/subscriptions/${sub.body.id}`)
    await w.bob.delete(`/api/subscriptions/${bobs.body.id}`)
  })
})

describe('views that show or filter on a virtual column', () => {
  it('move in the same commit as the row.work_updated; a view without one gets nothing', async () => {
    const start = await headOf(w.t, 'tenant-a')
    const res = await w.alice.patch(`${row(w.ids.p5)}/work`, { status: 'done' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const events = await eventsAfter(w.alice, start)
    const work = events.find((e) => e.type === 'row.work_updated')!
    expect(work.data).toMatchObject({ rowId: w.ids.p5, changed: { status: { from: 'open', to: 'done' } } })
    const updated = events.filter((e) => e.type === 'row.updated')
    expect(updated).toHaveLength(1)
    expect(updated[0]).toMatchObject({
      viewId: showsStatus,
      panelId: w.panelId,
      data: {
        rowId: w.ids.p5,
        key: 'p5',
        row: { Name: 'Zoe', _status: 'done' },
        changed: { _status: { from: 'open', to: 'done' } },
      },
    })
    const left = events.filter((e) => e.type === 'row.left')
    expect(left).toHaveLength(1)
    expect(left[0]).toMatchObject({ viewId: openOnly, data: { rowId: w.ids.p5, key: 'p5' } })
    expect(events.filter((e) => e.viewId === plain)).toEqual([])
    // One commit: the seqs are contiguous, and nothing else lies among them.
    const seqs = events.map((e) => e.seq).sort((a, b) => a - b)
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i))
    expect(events.map((e) => e.type).sort()).toEqual(['row.left', 'row.updated', 'row.work_updated'])
  })

  it('a claim changes no shown column: no row.* event for the views, only row.work_updated', async () => {
    const start = await headOf(w.t, 'tenant-a')
    expect((await w.alice.post(`${row(w.ids.p6)}/claim`, {})).status).toBe(200)
    expect((await eventsAfter(w.alice, start)).map((e) => e.type)).toEqual(['row.work_updated'])
  })
})
