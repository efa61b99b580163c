import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { prepareRows } from '../../../src/rowstore/query/prepare.ts'
import { rowIndexName } from '../../../src/rowstore/query/row-index.ts'
import { serviceCtx } from '../../helpers/app.ts'
import { type RowsWorld, rowsWorld } from './fixtures.ts'

/** The panel's row index follows its columns, and row queries are planned on it (docs/views-and-rows.md). */

let w: RowsWorld
beforeAll(async () => {
  w = await rowsWorld()
})
afterAll(() => w.server.close())

async function panelIndexes() {
  const rows = await w.t.client.execute({
    sql: `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND name LIKE ?`,
    args: [`records_p${w.panelId}_%`],
  })
  return rows.rows.map((r) => ({ name: String(r.name), sql: String(r.sql) }))
}

describe('row index', () => {
  it("exists for the panel's current columns, with each cell expression and the literal panel id", async () => {
    const indexes = await panelIndexes()
    expect(indexes.map((i) => i.name)).toEqual([rowIndexName(w.panelId, Object.values(w.columns))])
    expect(indexes[0].sql).toContain(`(cells ->> '$."${w.columns.Age}"')`)
    expect(indexes[0].sql).toContain(`WHERE panel_id = ${w.panelId}`)
  })

  it('is replaced when a column is created or deleted', async () => {
    const before = (await panelIndexes())[0].name
    const col = await w.alice.post(`/api/panels/${w.panelId}/columns/base`, { name: 'Extra', sourceField: 'city' })
    expect(col.status).toBe(201)
    const withExtra = await panelIndexes()
    expect(withExtra.map((i) => i.name)).toEqual([rowIndexName(w.panelId, [...Object.values(w.columns), col.body.id])])
    expect(withExtra[0].name).not.toBe(before)
    expect((await w.alice.delete(`/api/columns/${col.body.id}`)).status).toBe(204)
    expect((await panelIndexes()).map((i) => i.name)).toEqual([before])
  })

  it('serves the count, the page and the groups of a view query', async () => {
    const ctx = serviceCtx(w.t.deps, 'tenant-a', 'alice')
    const q = await prepareRows(
      ctx,
      { panel: { id: w.panelId, cohortRule: { conditions: [], logic: 'AND' } } },
      {
        filters: [
          { columnTitle: 'Age', operator: 'greaterThan', value: 30 },
          { columnTitle: 'City', operator: 'equals', value: 'London' },
        ],
        sort: 'Name',
      },
    )
    const dialect = (w.t.deps.db as unknown as { dialect: { sqlToQuery(s: unknown): { sql: string; params: unknown[] } } })
      .dialect
    const { sql: text, params } = dialect.sqlToQuery(q.scope)
    const plan = await w.t.client.execute({ sql: `EXPLAIN QUERY PLAN SELECT count(*) ${text}`, args: params as never[] })
    const detail = plan.rows.map((r) => String(r.detail)).join(' | ')
    expect(detail).toContain(`USING INDEX ${(await panelIndexes())[0].name}`)
    // The indexed cell values are read from the index, never by parsing the cells JSON per row.
    const program = await w.t.client.execute({ sql: `EXPLAIN SELECT count(*) ${text}`, args: params as never[] })
    expect(program.rows.filter((r) => r.opcode === 'Function' && String(r.p4).startsWith('->>'))).toEqual([])
  })
})
