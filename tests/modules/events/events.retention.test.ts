import { describe, expect, it } from 'vitest'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { append, eventsWorld, headOf, panelEvents } from './fixtures.ts'

const seqsOf = async (t: Awaited<ReturnType<typeof eventsWorld>>['t'], tenantId: string) =>
  (await t.client.execute({ sql: 'SELECT seq FROM events WHERE tenant_id = ? ORDER BY seq', args: [tenantId] })).rows.map((r) =>
    Number(r.seq),
  )

describe('retention (EVENTS_RETENTION_DAYS, EVENTS_RETENTION_MAX)', () => {
  it('the scheduler step deletes events older than the days, and the cursor behind them expires', async () => {
    const w = await eventsWorld()
    // The clock is 2026-01-01T12:00Z; the default keeps 7 days.
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 3), '2025-12-20T00:00:00.000Z')
    const firstRecent = (await headOf(w.t, 'tenant-a')) + 1
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 2, 4), '2025-12-30T00:00:00.000Z')
    // The views' events of the world are of the test clock's day: kept.
    const before = await seqsOf(w.t, 'tenant-a')
    const report = await runMaintenanceTick(w.t.deps)
    expect(report.eventsPruned).toBe(3)
    const after = await seqsOf(w.t, 'tenant-a')
    expect(after).toEqual(before.filter((s) => s < firstRecent - 3 || s >= firstRecent))
    expect((await runMaintenanceTick(w.t.deps)).eventsPruned).toBe(0)
    // The views' events (seq 1, 2) come first in tenant-a's log and are kept, so oldestSeq is 1 and
    // no cursor expires yet; in tenant-b everything is recent.
    expect((await w.alice.get('/api/events?after=0')).status).toBe(200)
  })

  it('keeps at most EVENTS_RETENTION_MAX events per tenant, newest first; numbering goes on', async () => {
    const w = await eventsWorld({ EVENTS_RETENTION_MAX: '3' })
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 5))
    const head = await headOf(w.t, 'tenant-a')
    const bHead = await headOf(w.t, 'tenant-b')
    const report = await runMaintenanceTick(w.t.deps)
    expect(report.eventsPruned).toBe(head - 3)
    expect(await seqsOf(w.t, 'tenant-a')).toEqual([head - 2, head - 1, head])
    expect((await seqsOf(w.t, 'tenant-b')).length).toBe(bHead)
    const expired = await w.alice.get(`/api/events?after=${head - 4}`)
    expect(expired.status).toBe(410)
    expect(expired.body.details.oldestSeq).toBe(head - 2)
    await append(w.t, 'tenant-a', panelEvents(w.panelId, 1))
    expect((await seqsOf(w.t, 'tenant-a')).at(-1)).toBe(head + 1)
  })

  it('deletes in bounded batches of statements, going on over several', async () => {
    const w = await eventsWorld()
    // In appends of 400 events: D1 refuses a statement over 100 KB.
    for (let i = 0; i < 6; i++) await append(w.t, 'tenant-a', panelEvents(w.panelId, 400), '2026-01-01T12:00:00.000Z')
    // Everything, the world's view events included (each view's creation, evaluation and changes), is older than 7 days.
    w.t.clock.advance(8 * 86_400_000)
    expect((await runMaintenanceTick(w.t.deps)).eventsPruned).toBe(2407)
    expect(await seqsOf(w.t, 'tenant-a')).toEqual([])
    const head = await headOf(w.t, 'tenant-a')
    expect((await w.alice.get(`/api/events?after=${head}`)).body).toEqual({ events: [], lastSeq: head, hasMore: false })
  })
})
