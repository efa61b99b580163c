import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Bad input to the work endpoints (WORKLIST.md §3 and §5; docs/worklist.md): each is a 400 naming
 * the field (or a 413), and nothing of it is applied — the row's state, its events and its change
 * records stay as they were.
 */

let w: RowsWorld
let viewId: number
beforeAll(async () => {
  w = await rowsWorld()
  const view = await w.alice.post('/api/views', { name: 'Everyone', panelId: w.panelId })
  viewId = view.body.id
  // p1 has some state to keep: in progress, due, version 1.
  const res = await w.alice.patch(`${row()}/work`, { status: 'in_progress', dueAt: '2030-01-01T00:00:00Z' })
  expect(res.status).toBe(200)
})
afterAll(() => w.server.close())

const row = (id = w.ids.p1) => `/api/panels/${w.panelId}/rows/${id}`

/** What a refused request must leave untouched: the state, the events and the change records of the tenant. */
async function snapshot() {
  const count = async (sql: string) => Number((await w.t.client.execute(sql)).rows[0].n)
  return {
    work: (await w.alice.get(row())).body._work,
    events: await count("SELECT COUNT(*) AS n FROM events WHERE tenant_id = 'tenant-a'"),
    changes: await count("SELECT COUNT(*) AS n FROM changes WHERE tenant_id = 'tenant-a' AND entity_type = 'row'"),
  }
}

/** A 400 VALIDATION_ERROR whose details name `field` (in a path, or in the message of an unknown key). */
function expectNamed(res: { status: number; body: any }, field: string, label: string) {
  expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(400)
  expect(res.body.code, label).toBe('VALIDATION_ERROR')
  const named = (res.body.details as { path: string; message: string }[]).some(
    (d) => d.path === field || d.path.startsWith(`${field}.`) || d.message.includes(`"${field}"`),
  )
  expect(named, `${label}: ${JSON.stringify(res.body.details)}`).toBe(true)
}

describe('PATCH …/work', () => {
  it('refuses each bad field with a 400 naming it and applies nothing, not even the good fields beside it', async () => {
    const before = await snapshot()
    const cases: [Record<string, unknown>, string][] = [
      [{ status: 'bogus' }, 'status'],
      [{ status: 'DONE' }, 'status'],
      [{ status: '' }, 'status'],
      [{ status: 7 }, 'status'],
      [{ status: null }, 'status'],
      [{ status: 'done', snoozedUntil: '2000-01-01T00:00:00Z' }, 'snoozedUntil'],
      // Now is not in the future (the test clock stands still).
      [{ snoozedUntil: w.t.clock.now().toISOString() }, 'snoozedUntil'],
      [{ status: 'done', dueAt: 'tomorrow' }, 'dueAt'],
      [{ dueAt: '2030-01-01' }, 'dueAt'],
      [{ dueAt: '2030-01-01T09:00:00' }, 'dueAt'],
      [{ dueAt: '2030-02-30T09:00:00Z' }, 'dueAt'],
      [{ dueAt: '2030-01-01T24:00:00Z' }, 'dueAt'],
      [{ dueAt: '01/02/2030 09:00' }, 'dueAt'],
      [{ dueAt: 1893456000000 }, 'dueAt'],
      [{ snoozedUntil: 'next week' }, 'snoozedUntil'],
      [{ snoozedUntil: '2031-01-01T00:00:00+25:00' }, 'snoozedUntil'],
      [{ status: 'done', colour: 'red' }, 'colour'],
      [{ _version: 9 }, '_version'],
      [{ version: 9 }, 'version'],
      [{ claimExpiresAt: '2031-01-01T00:00:00Z' }, 'claimExpiresAt'],
      [{ assignee: '' }, 'assignee'],
      [{ assignee: 42 }, 'assignee'],
      [{ assignee: ['alice'] }, 'assignee'],
      [{ assignee: 'x'.repeat(256) }, 'assignee'],
    ]
    for (const [body, field] of cases) {
      expectNamed(await w.alice.patch(`${row()}/work`, body), field, JSON.stringify(body).slice(0, 80))
    }
    expect(await snapshot()).toEqual(before)
  })

  it('refuses hostile strings in status and assignee, and stores an odd but plain assignee exactly as given', async () => {
    const before = await snapshot()
    for (const status of [
      "open' OR 1=1 --",
      'open; DROP TABLE row_identities',
      '<script>alert(1)</script>',
      'open\u0000',
      ' open',
      'done\n',
      '__proto__',
      'constructor',
      'in_progress'.repeat(10),
    ]) {
      expectNamed(await w.alice.patch(`${row()}/work`, { status }), 'status', JSON.stringify(status))
    }
    for (const assignee of ['bob\u0000', 'bob\n', '\u001b[31mbob', ' bob', 'bob ', '\t']) {
      expectNamed(await w.alice.patch(`${row()}/work`, { assignee }), 'assignee', JSON.stringify(assignee))
    }
    expect(await snapshot()).toEqual(before)
    // Printable text is a user id like any other: kept as given, answered as JSON.
    const odd = `<img src=x onerror=alert(1)>'; DROP TABLE row_identities; --`
    const res = await w.alice.patch(`${row(w.ids.p6)}/work`, { assignee: odd })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body._work.assignee).toBe(odd)
    expect((await w.alice.get(row(w.ids.p6))).body._work.assignee).toBe(odd)
    await w.alice.post(`${row(w.ids.p6)}/release`, {})
  })

  it('refuses a malformed If-Match with a 400 naming it, and applies nothing', async () => {
    const before = await snapshot()
    for (const ifMatch of ['3', '"abc"', 'W/3', '"1", "2"', '""', '"-1"', '"1.5"', '"9999999999999999"', "'1'", '"1']) {
      const res = await w.alice.patch(`${row()}/work`, { status: 'done' }, { 'If-Match': ifMatch })
      expectNamed(res, 'If-Match', ifMatch)
    }
    expect(await snapshot()).toEqual(before)
    // The ETag as given, weak or strong, and `*`, are understood.
    for (const ifMatch of [`"${before.work.version}"`, `W/"${before.work.version}"`, '*']) {
      const res = await w.alice.patch(`${row()}/work`, { status: 'in_progress' }, { 'If-Match': ifMatch })
      expect(res.status, ifMatch).toBe(200)
    }
  })

  it('refuses bad row ids in the path with a 400 naming rowId', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '99999999999999999']) {
      expectNamed(await w.alice.patch(`/api/panels/${w.panelId}/rows/${id}/work`, { status: 'done' }), 'rowId', id)
      expectNamed(await w.alice.get(`/api/panels/${w.panelId}/rows/${id}`), 'rowId', id)
    }
  })

  it.skipIf(onTarget('workers', SKIP.earlyAnswer))('answers a body over 1 MiB with 413, applying nothing', async () => {
    const before = await snapshot()
    const res = await w.alice.patch(`${row()}/work`, { status: 'done', note: 'x'.repeat(1024 * 1024) })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE')
    const claim = await w.alice.post(`${row()}/claim`, { leaseSeconds: 60, pad: 'x'.repeat(1024 * 1024) })
    expect(claim.status).toBe(413)
    expect(await snapshot()).toEqual(before)
  })

  it('a body under the limit with a huge field is a 400 naming it', async () => {
    const before = await snapshot()
    expectNamed(await w.alice.patch(`${row()}/work`, { status: 'x'.repeat(500_000) }), 'status', 'huge status')
    expectNamed(await w.alice.patch(`${row()}/work`, { assignee: 'x'.repeat(500_000) }), 'assignee', 'huge assignee')
    expect(await snapshot()).toEqual(before)
  })

  it('refuses a body that is not a JSON object', async () => {
    const before = await snapshot()
    for (const body of [[], 'done', 3, null]) {
      const res = await w.alice.patch(`${row()}/work`, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
    }
    expect(await snapshot()).toEqual(before)
  })
})

describe('claim and next', () => {
  it('refuses leaseSeconds out of range or not a whole number of seconds, naming it, and claims nothing', async () => {
    const before = await snapshot()
    for (const leaseSeconds of [9, 86_401, '10', 1.5, -10, 0, null, true, 1e308]) {
      const label = JSON.stringify(leaseSeconds)
      expectNamed(await w.alice.post(`${row()}/claim`, { leaseSeconds }), 'leaseSeconds', `claim ${label}`)
      expectNamed(await w.alice.post(`/api/views/${viewId}/next`, { leaseSeconds }), 'leaseSeconds', `next ${label}`)
    }
    expectNamed(await w.alice.post(`${row()}/claim`, { lease: 60 }), 'lease', 'claim with an unknown field')
    expectNamed(await w.alice.post(`/api/views/${viewId}/next`, { lease: 60 }), 'lease', 'next with an unknown field')
    expectNamed(await w.alice.post(`${row()}/release`, { force: true }), 'force', 'release with an unknown field')
    expect(await snapshot()).toEqual(before)
    const events = await w.t.client.execute(
      "SELECT COUNT(*) AS n FROM events WHERE tenant_id = 'tenant-a' AND type = 'row.work_updated' AND json_extract(data, '$.cause') IN ('claim', 'next')",
    )
    expect(Number(events.rows[0].n)).toBe(0)
  })

  it('the bounds themselves are accepted', async () => {
    for (const leaseSeconds of [10, 86_400]) {
      const res = await w.alice.post(`${row(w.ids.p2)}/claim`, { leaseSeconds })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      const expires = new Date(w.t.clock.now().getTime() + leaseSeconds * 1000).toISOString()
      expect(res.body._work.claimExpiresAt).toBe(expires)
    }
    await w.alice.post(`${row(w.ids.p2)}/release`, {})
  })
})
