import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { viewRowBatches } from '../../../src/modules/views/views.query.ts'
import { loadVisibleView } from '../../../src/modules/views/views.service.ts'
import { serviceCtx } from '../../helpers/app.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/** viewRowBatches: every matching row of a view in the view's order, in keyset batches (for exports). */

let w: RowsWorld
let viewId: number
beforeAll(async () => {
  w = await rowsWorld()
  const view = await w.alice.post('/api/views', {
    name: 'Batches',
    panelId: w.panelId,
    filters: [{ columnTitle: 'Age', operator: 'isNotNull' }],
    sorting: [{ columnTitle: 'Age', direction: 'desc' }],
    config: { columns: ['Name', 'Age'] },
  })
  viewId = view.body.id
})
afterAll(() => w.server.close())

async function collect(options: Parameters<typeof viewRowBatches>[2]) {
  const ctx = serviceCtx(w.t.deps, 'tenant-a', 'alice')
  const { row } = await loadVisibleView(ctx, viewId)
  const batches: unknown[][] = []
  for await (const batch of viewRowBatches(ctx, row, options)) batches.push(batch)
  return batches
}

describe('viewRowBatches', () => {
  it("yields every matching row in the view's order (Age desc), in batches, with the view columns", async () => {
    const batches = await collect({ batchSize: 2 })
    expect(batches.map((b) => b.length)).toEqual([2, 2, 1])
    const inOrder = [
      { _id: w.ids.p6, _key: 'p6', _source: w.sourceId, Name: 'Bob', Age: 67 },
      { _id: w.ids.p2, _key: 'p2', _source: w.sourceId, Name: 'grace', Age: 45 },
      { _id: w.ids.p3, _key: 'p3', _source: w.sourceId, Name: 'Alan', Age: 41 },
      { _id: w.ids.p1, _key: 'p1', _source: w.sourceId, Name: 'Ada', Age: 36 },
      { _id: w.ids.p5, _key: 'p5', _source: w.sourceId, Name: 'Zoe', Age: 29 },
    ]
    expect(batches.flat()).toEqual(inOrder)
    // The row query (a request filter: not the view's stored members) walks keyset steps of 3 ids:
    // the second starts after the first step's last row.
    const stepped = await collect({
      batchSize: 2,
      windowSize: 3,
      params: { filters: [{ columnTitle: 'Age', operator: 'isNotNull' }] },
    })
    expect(stepped.map((b) => b.length)).toEqual([2, 1, 2])
    expect(stepped.flat()).toEqual(inOrder)
  })

  it('stops at maxRows and adds request filters', async () => {
    expect((await collect({ batchSize: 2, maxRows: 3 })).flat()).toHaveLength(3)
    const filtered = await collect({ params: { filters: [{ columnTitle: 'Name', operator: 'startsWith', value: 'a' }] } })
    expect(filtered.flat().map((r) => (r as { Name: string }).Name)).toEqual(['Alan', 'Ada'])
  })
})
