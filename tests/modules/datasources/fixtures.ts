import { and, eq } from 'drizzle-orm'
import { afterAll, beforeAll, beforeEach } from 'vitest'
import { syncRuns } from '../../../src/db/schema.ts'
import { records } from '../../../src/db/schema-records.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { type FixtureServer, sendJson, sleep, startJsonServer } from '../../helpers/servers.ts'

export const PATIENTS = [
  { id: 'p1', name: 'Ada', age: 36 },
  { id: 'p2', name: 'Grace', age: 45 },
  { id: 'p3', name: 'Alan', age: 41 },
]

/** One loopback API for a test file; `state.patients` can be changed between syncs. */
export async function startApiFixture() {
  const state = { patients: [...PATIENTS], release: undefined as undefined | (() => void) }
  const server: FixtureServer = await startJsonServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    switch (url.pathname) {
      case '/patients':
        return sendJson(res, 200, state.patients)
      case '/wrapped':
        return sendJson(res, 200, { meta: { total: state.patients.length }, data: { items: state.patients } })
      case '/unavailable':
        return sendJson(res, 503, { error: 'down' })
      case '/html':
        res.writeHead(200, { 'content-type': 'text/html' })
        return void res.end('<html>nope</html>')
      case '/slow':
        await sleep(Number(url.searchParams.get('ms') ?? 1000))
        return sendJson(res, 200, state.patients)
      case '/held':
        // Answers only when the test calls state.release().
        await new Promise<void>((resolve) => {
          state.release = resolve
        })
        return sendJson(res, 200, state.patients)
      case '/echo-auth':
        return sendJson(res, 200, [{ id: 'a', authorization: req.headers.authorization ?? null }])
      default:
        return sendJson(res, 404, { error: 'no such fixture' })
    }
  })
  return { server, state }
}

export type ApiFixture = Awaited<ReturnType<typeof startApiFixture>>

export interface ApiSourceSuite {
  api: ApiFixture
  t: TestApp
  alice: TestClient
  panelId: number
}

/**
 * The set-up the data-source suites share: one loopback API for the file (its patients reset before
 * each test), and per test a fresh app, alice of tenant-a and one panel of hers. `use` receives them
 * before each test.
 */
export function apiSourceSuite(use: (suite: ApiSourceSuite) => void) {
  let api: ApiFixture
  beforeAll(async () => {
    api = await startApiFixture()
  })
  afterAll(() => api.server.close())
  beforeEach(async () => {
    api.state.patients = [...PATIENTS]
    const t = await makeTestApp()
    const alice = clientFor(t.app, 'tenant-a', 'alice')
    use({ api, t, alice, panelId: (await createPanel(alice)).id })
  })
}

export const createPanel = async (c: TestClient, name = 'Test Panel') => {
  const res = await c.post('/api/panels', { name, tenantId: c.tenantId, userId: c.userId })
  if (res.status !== 201) throw new Error(`panel create failed: ${res.status}`)
  return res.body as { id: number }
}

export const createSource = (c: TestClient, panelId: number, config: Record<string, unknown>, type = 'api') =>
  c.post(`/api/panels/${panelId}/datasources`, { type, config, tenantId: c.tenantId, userId: c.userId })

/** Records readers see: the current generation of the source. */
export async function currentRecords(t: TestApp, sourceId: number) {
  const rows = await t.client.execute({
    sql: `SELECT r.key, r.data, r.generation FROM records r JOIN data_sources s ON s.id = r.data_source_id
          WHERE r.data_source_id = ? AND r.generation = s.current_generation ORDER BY r.id`,
    args: [sourceId],
  })
  return rows.rows.map((r) => ({ key: String(r.key), data: JSON.parse(String(r.data)) }))
}

export const allRecords = (t: TestApp, sourceId: number) =>
  t.deps.db.select().from(records).where(eq(records.dataSourceId, sourceId))

export const runsOf = (t: TestApp, sourceId: number) =>
  t.deps.db
    .select()
    .from(syncRuns)
    .where(and(eq(syncRuns.dataSourceId, sourceId)))

/** Polls until `check` returns a value (bounded). */
export async function waitFor<T>(check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > end) throw new Error('waitFor timed out')
    await sleep(20)
  }
}
