import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { runBatch } from '../../../src/db/client.ts'
import { appendEvents, appendEventsFrom } from '../../../src/rowstore/events.ts'
import { makeTestApp } from '../../helpers/app.ts'

const AT = '2026-01-01T12:00:00.000Z'

describe('appendEvents', () => {
  it('numbers each tenant’s events 1, 2, 3 … in order, in the caller’s batch', async () => {
    const { deps } = await makeTestApp()
    const db = deps.db
    const run = (statements: ReturnType<typeof appendEvents>) =>
      runBatch(
        db,
        statements.map((s) => db.run(s)),
      )
    await run(
      appendEvents(
        'a',
        [
          { type: 'view.updated', viewId: 1, data: { n: 1 } },
          { type: 'view.deleted', data: { id: 2 } },
        ],
        AT,
      ),
    )
    await run(appendEvents('b', [{ type: 'view.updated', data: { n: 1 } }], AT))
    await run(
      appendEventsFrom(
        'a',
        sql`SELECT value AS ord, 'row.entered' AS type, 7 AS panel_id, NULL AS view_id, NULL AS data_source_id,
          json_object('n', value) AS data FROM json_each('[3, 1, 2]')`,
        AT,
      ),
    )
    const rows = await db.all<{ tenant_id: string; seq: number; type: string; data: string }>(
      sql`SELECT tenant_id, seq, type, data FROM events ORDER BY tenant_id, seq`,
    )
    expect(rows.map((r) => [r.tenant_id, r.seq, r.type, JSON.parse(r.data)])).toEqual([
      ['a', 1, 'view.updated', { n: 1 }],
      ['a', 2, 'view.deleted', { id: 2 }],
      ['a', 3, 'row.entered', { n: 1 }],
      ['a', 4, 'row.entered', { n: 2 }],
      ['a', 5, 'row.entered', { n: 3 }],
      ['b', 1, 'view.updated', { n: 1 }],
    ])
    // A pruned log never gives a number twice.
    await db.run(sql`DELETE FROM events WHERE tenant_id = 'a'`)
    await run(appendEvents('a', [{ type: 'view.updated', data: {} }], AT))
    const [next] = await db.all<{ seq: number }>(sql`SELECT seq FROM events WHERE tenant_id = 'a'`)
    expect(next.seq).toBe(6)
    // An append of nothing writes nothing and moves no number.
    await run(
      appendEventsFrom(
        'a',
        sql`SELECT 1 AS ord, 'x' AS type, 0 AS panel_id, 0 AS view_id, 0 AS data_source_id, '{}' AS data WHERE 0`,
        AT,
      ),
    )
    const [last] = await db.all<{ n: number }>(sql`SELECT last_seq AS n FROM event_sequences WHERE tenant_id = 'a'`)
    expect(last.n).toBe(6)
  })
})
