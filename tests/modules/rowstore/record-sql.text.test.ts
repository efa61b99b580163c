import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * What the row store's INSERT (rowstore/record-sql.ts) stores of a record: its data exactly as the
 * JSON text of what the source gave, whatever the strings hold (quotes, backslashes, control
 * characters, U+2028, a lone surrogate, astral characters), and blank values kept as they are; and a
 * full sync that brings the same data keeps a resource's time, one that changes it does not.
 */

const HOSTILE = `it's "odd" \\ \u0001 \u2028 \ud800 💊 </script> ) --`

const patients: Record<string, unknown>[] = [
  { resourceType: 'Patient', id: 'a', s: HOSTILE, empty: '', none: [], one: ['x'], zero: 0, no: false, n: 1e21 },
  { resourceType: 'Patient', id: 'b', s: 'plain', nested: { deep: [{ v: -1e-7 }] } },
]
let w: RowsWorld

beforeAll(async () => {
  w = await rowsWorld(patients)
})
afterAll(() => w.server.close())

const stored = () =>
  w.t.deps.db.all<{ key: string; data: string; updated_at: string }>(
    sql`SELECT r.key, r.data, r.updated_at FROM records r JOIN data_sources s ON s.id = r.data_source_id
      AND r.generation = s.current_generation WHERE r.data_source_id = ${w.sourceId} ORDER BY r.key`,
  )

const sync = async () => {
  const res = await w.alice.post(`/api/datasources/${w.sourceId}/sync`)
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
}

describe('a stored record', () => {
  it('is the JSON text of the record as the source gave it', async () => {
    const rows = await stored()
    expect(rows.map((r) => r.key)).toEqual(['a', 'b'])
    expect(rows.map((r) => r.data)).toEqual(patients.map((p) => JSON.stringify(p)))
    expect(JSON.parse(rows[0].data)).toEqual(patients[0])
  })

  it('keeps its time through a full sync that brings the same data, and only then', async () => {
    const before = await stored()
    w.t.clock.advance(60_000)
    patients[1].s = 'changed'
    await sync()
    const after = await stored()
    expect(after[1].data).toBe(JSON.stringify(patients[1]))
    expect(after[0].updated_at).toBe(before[0].updated_at)
    expect(after[1].updated_at > before[1].updated_at).toBe(true)
    expect(after[1].data).toBe(JSON.stringify(patients[1]))
  })
})
