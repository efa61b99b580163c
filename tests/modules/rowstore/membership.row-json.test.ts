import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * The row a view's member and its `row.*` events carry is the row `GET /api/views/{id}/rows`
 * answers, key for key: column names of any spelling (quotes, backslashes, non-ASCII) and views
 * wider than one `json_object` call (built from the shape instead).
 */

const ODD = `it's "odd" \\ é 💊 ) --`
const WIDE = 65

const patients = [
  { id: 'a', n: 1, s: 'x' },
  { id: 'b', n: 2, s: 'y' },
]
let w: RowsWorld

beforeAll(async () => {
  w = await rowsWorld(patients)
  const odd = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name: ODD, sourceField: 's', type: 'text' })
  expect(odd.status, JSON.stringify(odd.body)).toBe(201)
  for (let i = 0; i < WIDE; i++) {
    const res = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name: `C${i}`, sourceField: 'n', type: 'number' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  }
})
afterAll(() => w.server.close())

async function updatedRow(viewId: number, key: string): Promise<unknown> {
  const rows = await w.t.deps.db.all<{ data: string }>(
    sql`SELECT data FROM events WHERE view_id = ${viewId} AND type = 'row.updated' ORDER BY seq DESC LIMIT 1`,
  )
  const data = JSON.parse(rows[0]?.data ?? 'null') as { key: string; row: unknown } | null
  expect(data?.key).toBe(key)
  return data?.row
}

describe('the row of a member and of its events', () => {
  it.each([
    ['a column with an odd name', { config: { columns: ['Name', ODD] } }],
    [`a view of ${WIDE + 10} columns`, {}],
  ])('%s: the event carries the row GET answers', async (_label, extra) => {
    const view = await w.alice.post('/api/views', { name: 'Rows', panelId: w.panelId, ...extra })
    expect(view.status, JSON.stringify(view.body)).toBe(201)
    patients[0].s = `changed ${view.body.id}`
    patients[0].n += 10
    const sync = await w.alice.post(`/api/datasources/${w.sourceId}/sync`)
    expect(sync.status, JSON.stringify(sync.body)).toBeLessThan(300)
    const page = await w.alice.get(`/api/views/${view.body.id}/rows`)
    const row = (page.body.data as { _key: string }[]).find((r) => r._key === 'a')
    expect(row).toBeDefined()
    expect(await updatedRow(view.body.id, 'a')).toEqual(row)
    expect(Object.keys((await updatedRow(view.body.id, 'a')) as object)).toEqual(Object.keys(row as object))
  })
})
