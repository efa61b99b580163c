import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, type Service, SMOKE_SECRET, startNodeFromSource, waitForHealth } from './processes.ts'
import { bearer } from './smoke.ts'

/**
 * Claims under concurrency on the real Node server (WORKLIST.md §3 "Concurrency is the database's
 * job", §6): 50 users claiming one row at once get exactly one 200 and 49 × 409 naming the winner;
 * 20 users calling `next` over a view of 1,000 rows until it answers 204 claim every row exactly
 * once. Both on one process, and on two processes sharing one database file with the requests
 * alternating between them — so nothing may rest on an in-process lock or cache. Loopback only;
 * the processes and their files are removed after.
 *
 * The two-instance runs are the ones that tell a conditional write from a read-then-write: one
 * process runs each request's database calls synchronously on its single connection, so even a
 * racy claim (read the holder, then write) passes there, while across two processes it gave two
 * 200s, and a racy `next` (choose, then take by id) gave hundreds of rows claimed twice. The
 * one-instance runs still prove the answers (one 200, 409s naming the winner, no 500) and the
 * complete, duplicate-free queue.
 */

const TENANT = 'ward'
const OWNER = 'owner'
const CLAIMERS = 50
const NEXT_CALLERS = 20
const NEXT_ROWS = 1_000
/** Every request's deadline: a stuck write fails the test instead of hanging it. */
const REQUEST_MS = 30_000

interface Answer {
  status: number
  body: any
}

describe.each([
  ['one instance', 1],
  ['two instances on one database file', 2],
])('claims under concurrency, %s', (_name, instances) => {
  let dir = ''
  const services: Service[] = []
  const bases: string[] = []
  const tokens = new Map<string, Record<string, string>>()

  /** The headers of `userId` (a token of the tenant, signed once). */
  const as = async (userId: string) => {
    let headers = tokens.get(userId)
    if (!headers) {
      headers = await bearer(SMOKE_SECRET, TENANT, userId)
      tokens.set(userId, headers)
    }
    return headers
  }

  /** One request to instance `at` (modulo the instances), with a deadline; never throws on a status. */
  async function call(at: number, userId: string, method: string, path: string, body?: unknown): Promise<Answer> {
    const res = await fetch(`${bases[at % bases.length]}${path}`, {
      method,
      headers: await as(userId),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_MS),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }

  async function ok(path: string, body: unknown, method = 'POST', status = method === 'POST' ? 201 : 200) {
    const res = await call(0, OWNER, method, path, body)
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status)
    return res.body
  }

  /**
   * A panel of the owner with `count` imported rows (MRN m0000…, Rank 0…) and a view of them in
   * Rank order, published with `edit` so every user of the tenant may claim its rows. Answers the
   * view's id and its row ids in its order (read as the owner).
   */
  async function seededView(name: string, count: number) {
    const panel = await ok('/api/panels', { name, tenantId: TENANT, userId: OWNER })
    for (const [column, field, type] of [
      ['MRN', 'mrn', 'text'],
      ['Rank', 'rank', 'number'],
    ]) {
      await ok(`/api/panels/${panel.id}/columns/base`, { name: column, sourceField: field, type })
    }
    const rows = Array.from({ length: count }, (_, i) => ({ mrn: `m${String(i).padStart(4, '0')}`, rank: i }))
    const config = {
      format: 'json',
      mapping: [
        { sourceField: 'mrn', targetColumn: 'MRN' },
        { sourceField: 'rank', targetColumn: 'Rank' },
      ],
      validation: { uniqueFields: ['mrn'] },
    }
    const report = await ok(`/api/panels/${panel.id}/import`, { config, rows }, 'POST', 200)
    expect(report).toMatchObject({ rowsImported: count, rowsRejected: 0 })
    const view = await ok('/api/views', { name, panelId: panel.id, sorting: [{ columnTitle: 'Rank', direction: 'asc' }] })
    await ok(`/api/views/${view.id}/publish`, { publishConfig: { permissions: ['read', 'edit'], userGroups: [] } }, 'POST', 200)
    const ids: number[] = []
    for (let page = 1; ids.length < count; page++) {
      const res = await ok(`/api/views/${view.id}/rows?limit=100&page=${page}`, undefined, 'GET')
      expect(res.data.length, `page ${page} of the view`).toBeGreaterThan(0)
      ids.push(...res.data.map((r: { _id: number }) => r._id))
    }
    expect(new Set(ids).size).toBe(count)
    return { viewId: view.id as number, ids }
  }

  beforeAll(async () => {
    // Made here, not when the file is collected: a run that skips this block leaves no folder behind.
    dir = mkdtempSync(join(tmpdir(), 'work-concurrency-'))
    for (let i = 0; i < instances; i++) {
      // One after the other: the first migrates the file, the second finds it migrated.
      const port = await freePort()
      const service = startNodeFromSource(dir, port, {})
      services.push(service)
      const base = `http://127.0.0.1:${port}`
      await waitForHealth(service, base, 120_000)
      bases.push(base)
    }
  }, 260_000)

  afterAll(async () => {
    for (const s of services.reverse()) await s.stop(2_000)
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it(`${CLAIMERS} users claiming one row at once: exactly one 200, and ${CLAIMERS - 1} × 409 naming the winner`, async () => {
    const { viewId, ids } = await seededView('One row', 3)
    const rowId = ids[1]
    const users = Array.from({ length: CLAIMERS }, (_, i) => `nurse-${String(i).padStart(2, '0')}`)
    // Each user reads the row first, so every connection is open and every token verified: the
    // claims then reach the server together and are in flight at once, not one after another.
    const reads = await Promise.all(users.map((user, i) => call(i, user, 'GET', `/api/views/${viewId}/rows/${rowId}`)))
    expect(reads.map((r) => r.status)).toEqual(users.map(() => 200))
    const answers = await Promise.all(
      users.map((user, i) => call(i, user, 'POST', `/api/views/${viewId}/rows/${rowId}/claim`, { leaseSeconds: 600 })),
    )
    const statuses = answers.map((a) => a.status)
    const won = answers.filter((a) => a.status === 200)
    expect(won, JSON.stringify(answers.filter((a) => a.status !== 200 && a.status !== 409))).toHaveLength(1)
    expect(statuses.filter((s) => s === 409)).toHaveLength(CLAIMERS - 1)
    const winner = users[answers.indexOf(won[0])]
    expect(won[0].body._work).toMatchObject({ assignee: winner, version: 1 })
    for (const lost of answers.filter((a) => a.status === 409)) {
      expect(lost.body).toMatchObject({ code: 'CONFLICT', details: { assignee: winner } })
    }
    // What the database holds agrees, on every instance: one claim, one change.
    for (let at = 0; at < bases.length; at++) {
      const row = await call(at, OWNER, 'GET', `/api/views/${viewId}/rows/${rowId}`)
      expect(row.status).toBe(200)
      expect(row.body._work).toMatchObject({ assignee: winner, version: 1 })
    }
  })

  it(`${NEXT_CALLERS} users calling next until 204 over ${NEXT_ROWS} rows: every row claimed once, none twice, none skipped`, async () => {
    const { viewId, ids } = await seededView('Queue', NEXT_ROWS)
    const users = Array.from({ length: NEXT_CALLERS }, (_, i) => `worker-${String(i).padStart(2, '0')}`)
    await Promise.all(users.map(as))
    const claimed: { rowId: number; by: string; assignee: string }[] = []
    const unexpected: Answer[] = []
    await Promise.all(
      users.map(async (user, u) => {
        // Each caller alternates between the instances, starting where its index says.
        for (let n = u; ; n++) {
          const res = await call(n, user, 'POST', `/api/views/${viewId}/next`, { leaseSeconds: 3_600 })
          if (res.status === 204) return
          if (res.status !== 200) {
            unexpected.push(res)
            return
          }
          claimed.push({ rowId: res.body._id, by: user, assignee: res.body._work.assignee })
          // A loop that never ends is a failure too.
          if (claimed.length > NEXT_ROWS) return
        }
      }),
    )
    expect(unexpected, JSON.stringify(unexpected.slice(0, 3))).toEqual([])
    const rowIds = claimed.map((c) => c.rowId)
    const twice = rowIds.filter((id, i) => rowIds.indexOf(id) !== i)
    expect(twice, 'rows claimed twice').toEqual([])
    expect([...rowIds].sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b))
    for (const c of claimed) expect(c.assignee).toBe(c.by)
    // Every caller got work: the queue was shared, not drained by one.
    expect(new Set(claimed.map((c) => c.by)).size).toBe(NEXT_CALLERS)
    // Nothing is left: one more call on each instance answers 204.
    for (let at = 0; at < bases.length; at++) {
      expect((await call(at, users[0], 'POST', `/api/views/${viewId}/next`, {})).status).toBe(204)
    }
  }, 240_000)

  it('logged no error on any instance (a write that failed on a busy database would show here)', () => {
    for (const service of services) {
      const errors = service
        .output()
        .split('\n')
        .filter((line) => line.includes('"level":"error"') || /SQLITE_BUSY|database is locked/i.test(line))
      expect(errors).toEqual([])
    }
  })
})
