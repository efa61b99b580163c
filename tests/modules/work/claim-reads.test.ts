import type { Client, InStatement } from '@libsql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * What a claim under a view costs the database (docs/performance.md "Claims"): the panel, its views
 * and its columns are read once per request — the row query, the reader's limits and the write's
 * membership step are built from that one read — and a work change lists its identities for the
 * views' membership step only when a view of the panel shows or filters on a work column.
 */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

/** A view of alice's showing `columns`, published to her tenant with read and edit; its id. */
async function publishedView(columns: string[]): Promise<number> {
  const view = await w.alice.post('/api/views', {
    name: `Worklist ${columns.join(' ')}`,
    panelId: w.panelId,
    config: { columns },
  })
  expect(view.status, JSON.stringify(view.body)).toBe(201)
  const published = await w.alice.post(`/api/views/${view.body.id}/publish`, {
    publishConfig: { permissions: ['read', 'edit'], userGroups: [] },
  })
  expect(published.status, JSON.stringify(published.body)).toBe(200)
  return view.body.id
}

/** The SQL the app's database client runs during `act` (single statements and each statement of a batch). */
async function statementsOf(act: () => Promise<void>): Promise<string[]> {
  const client = (w.t.deps.db as unknown as { $client: Client }).$client
  const seen: string[] = []
  const text = (s: InStatement) => (typeof s === 'string' ? s : s.sql)
  const execute = client.execute
  const batch = client.batch
  client.execute = ((s: InStatement, ...rest: unknown[]) => {
    seen.push(text(s))
    return (execute as (...a: unknown[]) => unknown).call(client, s, ...rest)
  }) as Client['execute']
  client.batch = ((list: InStatement[], ...rest: unknown[]) => {
    seen.push(...list.map(text))
    return (batch as (...a: unknown[]) => unknown).call(client, list, ...rest)
  }) as Client['batch']
  try {
    await act()
  } finally {
    client.execute = execute
    client.batch = batch
  }
  return seen.map((s) => s.replace(/\s+/g, ' '))
}

const reading = (table: string) => (sql: string) => new RegExp(`\\bfrom "?${table}"?\\b`, 'i').test(sql)
/** A read of the panel's views (all of them, by panel). */
const panelViews = (sql: string) => /\bfrom views\b[^)]*\bpanel_id = /i.test(sql)
const listing = (sql: string) => /INSERT OR IGNORE INTO pending_changes .*SELECT \?, 0,/i.test(sql)

describe('a claim under a view', () => {
  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'reads the panel and its columns once, and lists no identity for views that do not read work',
    async () => {
      const viewId = await publishedView(['Name', 'City'])
      const sql = await statementsOf(async () => {
        const res = await w.bob.post(`/api/views/${viewId}/rows/${w.ids.p1}/claim`, {})
        expect(res.status, JSON.stringify(res.body)).toBe(200)
        expect(res.body._work).toMatchObject({ assignee: 'bob' })
      })
      expect(sql.filter(reading('panels'))).toHaveLength(1)
      expect(sql.filter(reading('columns'))).toHaveLength(1)
      expect(sql.filter(panelViews)).toHaveLength(1)
      expect(sql.filter(listing)).toEqual([])
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'lists the identities, and moves the view, when a view of the panel shows a work column',
    async () => {
      const viewId = await publishedView(['Name', '_assignee'])
      const before = await w.t.client.execute({
        sql: "SELECT coalesce(max(seq), 0) AS seq FROM events WHERE tenant_id = 'tenant-a'",
        args: [],
      })
      const sql = await statementsOf(async () => {
        const res = await w.bob.post(`/api/views/${viewId}/rows/${w.ids.p2}/claim`, {})
        expect(res.status, JSON.stringify(res.body)).toBe(200)
      })
      expect(sql.filter(listing)).toHaveLength(1)
      const moved = await w.t.client.execute({
        sql: "SELECT type, view_id FROM events WHERE tenant_id = 'tenant-a' AND seq > ? AND type = 'row.updated'",
        args: [Number(before.rows[0].seq)],
      })
      expect(moved.rows.map((r) => Number(r.view_id))).toContain(viewId)
    },
  )
})
