import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { recomputePanel } from '../../../src/rowstore/recompute.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'

/**
 * A long recompute lets the process serve others between its batches: the database client runs each
 * statement to its end before it answers, so a loop of awaited statements alone would never give
 * timers and sockets a turn (docs/performance.md "Recompute of a calculated column").
 */

let server: FixtureServer
let t: TestApp
let panelId: number
beforeAll(async () => {
  const records = Array.from({ length: 2500 }, (_, i) => ({ id: `p${i}`, n: i }))
  server = await startJsonServer((_req, res) => sendJson(res, 200, records))
})
afterAll(() => server.close())

it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))('gives the event loop a turn between its batches', async () => {
  t = await makeTestApp()
  const alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Many', tenantId: 'tenant-a', userId: 'alice' })).body.id
  expect((await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'N', sourceField: 'n', type: 'number' })).status).toBe(
    201,
  )
  const source = await alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: server.url, keyField: 'id' },
    tenantId: 'tenant-a',
    userId: 'alice',
  })
  expect(source.body.syncStatus).toBe('success')
  const calc = await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Twice', formula: '{N} * 2' })
  expect(calc.status).toBe(201)
  // A new formula behind the service's back, so the recompute below has every row to rewrite.
  await t.deps.db.run(sql`UPDATE columns SET formula = '{N} * 3' WHERE id = ${calc.body.id}`)
  await t.deps.db.run(sql`UPDATE panels SET columns_version = columns_version + 1 WHERE id = ${panelId}`)
  let turns = 0
  const timer = setInterval(() => turns++, 0)
  try {
    // Every row but p0, whose 0 × 2 is 0 × 3.
    expect(await recomputePanel(t.deps.db, 'tenant-a', panelId, () => t.clock.now())).toBe(2499)
  } finally {
    clearInterval(timer)
  }
  expect(turns).toBeGreaterThanOrEqual(2)
})
