import { beforeEach, describe, expect, it } from 'vitest'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { type AuditWorld, auditWorld } from './fixtures.ts'

let w: AuditWorld

beforeEach(async () => {
  w = await auditWorld({ env: { AUDIT_RETENTION_DAYS: '30' } })
})

const accessedAt = async () => {
  const res = await w.alice.get(`/api/views/${w.viewId}`)
  expect(res.status).toBe(200)
  return res.body.accessedAt
}

describe('accessedAt of a view', () => {
  it('is null until the view’s rows are read, then the time of the read, in every view answer', async () => {
    expect(await accessedAt()).toBeNull()
    w.t.clock.advance(5_000)
    await w.alice.get(`/api/views/${w.viewId}/rows`)
    expect(await accessedAt()).toBe('2026-01-01T12:00:05.000Z')
    const listed = await w.alice.get('/api/views')
    expect(listed.body.views[0].accessedAt).toBe('2026-01-01T12:00:05.000Z')
  })

  it('moves at most once a minute, and with exports and other users’ reads', async () => {
    await w.alice.post(`/api/views/${w.viewId}/publish`, {})
    await w.alice.get(`/api/views/${w.viewId}/rows`)
    w.t.clock.advance(30_000)
    await w.bob.get(`/api/views/${w.viewId}/rows`)
    expect(await accessedAt()).toBe('2026-01-01T12:00:00.000Z')
    w.t.clock.advance(30_000)
    await w.bob.get(`/api/views/${w.viewId}/export`)
    expect(await accessedAt()).toBe('2026-01-01T12:01:00.000Z')
  })

  it('does not move for refused reads or change the view’s updatedAt', async () => {
    const before = (await w.alice.get(`/api/views/${w.viewId}`)).body.updatedAt
    await w.bob.get(`/api/views/${w.viewId}/rows`)
    await w.alice.get(`/api/views/${w.viewId}/rows?limit=0`)
    expect(await accessedAt()).toBeNull()
    w.t.clock.advance(1_000)
    await w.alice.get(`/api/views/${w.viewId}/rows`)
    expect((await w.alice.get(`/api/views/${w.viewId}`)).body.updatedAt).toBe(before)
  })
})

describe('retention (AUDIT_RETENTION_DAYS)', () => {
  it('the scheduler step deletes records older than the retention and keeps the rest', async () => {
    await w.alice.get(`/api/views/${w.viewId}/rows`)
    w.t.clock.advance(20 * 86_400_000)
    await w.alice.get(`/api/panels/${w.panelId}/rows`)
    w.t.clock.advance(11 * 86_400_000)
    const report = await runMaintenanceTick(w.t.deps)
    expect(report.auditPruned).toBe(1)
    const left = await w.admin.get('/api/audit')
    expect(left.body.records.map((r: { path: string }) => r.path)).toEqual([`/api/panels/${w.panelId}/rows`])
    expect((await runMaintenanceTick(w.t.deps)).auditPruned).toBe(0)
  })

  it('deletes in bounded batches, going on over several statements', async () => {
    const values = Array.from(
      { length: 2500 },
      (_, i) => `('2020-01-01T00:00:00.000Z', 'tenant-a', 'u', 'read', ${i}, 0, '{}', '/x', 'r', 'success', 200)`,
    )
    // In statements of 500 rows: D1 refuses a statement over 100 KB.
    for (let i = 0; i < values.length; i += 500) {
      await w.t.client.execute(
        `INSERT INTO access_records (at, tenant_id, user_id, action, panel_id, row_count, query, path, request_id, outcome, status) VALUES ${values.slice(i, i + 500).join(',')}`,
      )
    }
    await w.alice.get(`/api/views/${w.viewId}/rows`)
    expect((await runMaintenanceTick(w.t.deps)).auditPruned).toBe(2500)
    expect((await w.admin.get('/api/audit')).body.total).toBe(1)
  })
})
