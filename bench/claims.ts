/**
 * The "Claims" part of `npm run bench:api` (WORKLIST.md §6: a claim's p99 ≤ 20 ms at 10 concurrent
 * clients on the Node server). On the benchmark's server: a panel of 1,000 imported rows and a view
 * of them published with `edit`, so ten users of the tenant may claim its rows. A reference load of
 * one connection (a claim's own latency, nothing queued before it), then two loads of 10 autocannon
 * connections, each connection one user:
 *
 * - distinct rows: each user claims and releases a row of their own, again and again — every request
 *   is a conditional write that succeeds, so the figures are the write's cost;
 * - distinct rows, paced: the same at 10 requests/s per user (100/s in all, under the server's
 *   capacity), so a claim waits only on the claims that happen to arrive with it;
 * - one row: all ten claim the same row — the holder renews (200), the others are refused (409
 *   naming the holder); the conditional write under contention, refusals included.
 *
 * Beside the latencies, the server's CPU time per request (from /proc): it bounds what 10 clients can
 * see, since a closed loop of 10 waits on average 10 × that time on one busy core.
 *
 * Every answer is checked: anything but the expected statuses fails the case, and after each load the
 * rows' versions must have grown by the writes that answered 200 (plus at most one per connection
 * cut off when the load stopped).
 */
import autocannon, { type Client, type Instance } from 'autocannon'

const CLIENTS = 10
const ROWS = 1_000
export const CLAIM_TARGET_P99_MS = 20
/** Requests per second of each user in the paced load (half claims, half releases). */
const PACED_RATE = 10

type Headers = Record<string, string>

export interface ClaimsCase {
  name: string
  /**
   * Held to the target: 10 clients, each sending as soon as answered. The single client (a claim's own
   * latency) and the paced load (10 clients at a set rate each) are there to read that figure by.
   */
  judged: boolean
  requests: number
  rps: number
  /** Latency of each kind of request in the case (claim, release…), ms. */
  latency: { kind: string; count: number; p50: number; p99: number }[]
  statuses: Record<string, number>
  /** The server's CPU time (user + system) per answered request, ms; NaN when it cannot be read. */
  cpuPerRequest: number
  /** What went wrong (unexpected statuses, versions that do not add up); empty when the case holds. */
  problems: string[]
}

/** Seeds the view, checks a claim answers correctly, and runs both loads. */
export async function benchClaims(
  base: string,
  auth: (userId: string) => Promise<Headers>,
  tenantId: string,
  seconds: number,
  warmup: number,
  /** The server's CPU time so far, ms (NaN when unknown). */
  serverCpu: () => number,
): Promise<ClaimsCase[]> {
  const owner = await auth('claims-owner')
  const users = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => auth(`nurse-${i}`)))
  const { viewId, rowIds } = await seed(base, owner, tenantId)
  const row = (id: number) => `/api/views/${viewId}/rows/${id}`
  const claimBody = JSON.stringify({ leaseSeconds: 600 })

  // A fast wrong answer is no result: one claim and release answer as they must.
  const first = await post(base, `${row(rowIds[0])}/claim`, users[0], claimBody)
  if (first.status !== 200 || first.body._work?.assignee !== 'nurse-0') throw new Error(`claim: ${first.status}`)
  const freed = await post(base, `${row(rowIds[0])}/release`, users[0], '{}')
  if (freed.status !== 200 || freed.body._work?.assignee !== null) throw new Error(`release: ${freed.status}`)

  const own = rowIds.slice(0, CLIENTS)
  const alone = await measure(
    {
      name: 'claim + release, 1 user (reference)',
      connections: 1,
      expected: ['200'],
      kinds: ['claim', 'release'],
      requests: () => [
        { method: 'POST', path: `${row(own[0])}/claim`, headers: users[0], body: claimBody },
        { method: 'POST', path: `${row(own[0])}/release`, headers: users[0], body: '{}' },
      ],
      rows: [own[0]],
    },
    { base, owner, row, seconds, warmup, serverCpu },
  )
  // Each user claims and releases a row of their own: as fast as answered, then at a set rate.
  const ownRows: Omit<LoadSpec, 'name'> = {
    connections: CLIENTS,
    expected: ['200'],
    kinds: ['claim', 'release'],
    requests: (i: number) => [
      { method: 'POST', path: `${row(own[i])}/claim`, headers: users[i], body: claimBody },
      { method: 'POST', path: `${row(own[i])}/release`, headers: users[i], body: '{}' },
    ],
    rows: own,
  }
  const distinct = await measure(
    { ...ownRows, name: `claim + release, ${CLIENTS} users, a row each` },
    { base, owner, row, seconds, warmup, serverCpu },
  )
  const paced = await measure(
    { ...ownRows, name: `claim + release, ${CLIENTS} users, a row each, ${PACED_RATE} requests/s each`, rate: PACED_RATE },
    { base, owner, row, seconds, warmup, serverCpu },
  )
  const shared = rowIds[CLIENTS]
  const contended = await measure(
    {
      name: `claim, ${CLIENTS} users, one row`,
      connections: CLIENTS,
      expected: ['200', '409'],
      kinds: ['claim'],
      requests: (i) => [{ method: 'POST', path: `${row(shared)}/claim`, headers: users[i], body: claimBody }],
      rows: [shared],
    },
    { base, owner, row, seconds, warmup, serverCpu },
  )
  return [alone, distinct, paced, contended]
}

/** The table of the claims cases: latency per kind of request, against the target for claims. */
export function claimsTable(cases: ClaimsCase[]): string {
  const head = ['case', 'request', 'count', 'req/s', 'CPU ms/req', 'p50 ms', 'p99 ms', 'target', 'result']
  const rows: string[][] = []
  for (const c of cases) {
    for (const [i, l] of c.latency.entries()) {
      const judged = c.judged && l.kind === 'claim'
      const pass = c.problems.length === 0 && (!judged || l.p99 <= CLAIM_TARGET_P99_MS)
      rows.push([
        i === 0 ? c.name : '',
        l.kind,
        String(l.count),
        i === 0 ? c.rps.toFixed(0) : '',
        i === 0 ? c.cpuPerRequest.toFixed(2) : '',
        l.p50.toFixed(3),
        l.p99.toFixed(3),
        judged ? `p99 ≤ ${CLAIM_TARGET_P99_MS} ms` : '',
        pass ? 'pass' : 'FAIL',
      ])
    }
  }
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cells: string[]) =>
    cells.map((c, i) => (i >= 2 && i <= 6 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ')
  const statuses = cases.map(
    (c) =>
      `${c.name}: ${Object.entries(c.statuses)
        .map(([s, n]) => `${n} × ${s}`)
        .join(', ')}${c.problems.length ? ` — ${c.problems.join('; ')}` : ''}`,
  )
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line), '', ...statuses].join('\n')
}

export const claimsPass = (cases: ClaimsCase[]) =>
  cases.every(
    (c) => c.problems.length === 0 && (!c.judged || c.latency.every((l) => l.kind !== 'claim' || l.p99 <= CLAIM_TARGET_P99_MS)),
  )

// --- Internal helpers ---

interface LoadSpec {
  name: string
  /** Concurrent connections, each one user. */
  connections: number
  /** Requests per second of each connection; none: each sends its next request as soon as answered. */
  rate?: number
  /** Statuses every answer must have. */
  expected: string[]
  /** The kind of each request of a connection's sequence, in order. */
  kinds: string[]
  /** The sequence connection `i` repeats. */
  requests: (i: number) => { method: 'POST'; path: string; headers: Headers; body: string }[]
  /** The rows the load writes (their versions are checked after it). */
  rows: number[]
}

const running = new Set<Instance>()
process.once('exit', () => {
  for (const i of running) i.stop()
})

/** A warm-up run, then the measured run; the rows' versions must grow by exactly the 200s. */
async function measure(
  spec: LoadSpec,
  on: {
    base: string
    owner: Headers
    row: (id: number) => string
    seconds: number
    warmup: number
    serverCpu: () => number
  },
): Promise<ClaimsCase> {
  const { base, owner, row } = on
  if (on.warmup > 0) await (spec.rate ? paced(spec, base, on.warmup, spec.rate) : run(spec, base, on.warmup))
  const before = await versions(base, owner, row, spec.rows)
  const cpu = on.serverCpu()
  const result = await (spec.rate ? paced(spec, base, on.seconds, spec.rate) : run(spec, base, on.seconds))
  result.cpuPerRequest = (on.serverCpu() - cpu) / result.requests
  const after = await versions(base, owner, row, spec.rows)
  const grown = after.reduce((sum, v, i) => sum + v - before[i], 0)
  const ok = result.statuses['200'] ?? 0
  // autocannon closes its connections when the time is up: a request each may have been written
  // without its answer being counted.
  if (grown < ok || grown > ok + spec.connections) {
    result.problems.push(`the rows' versions grew by ${grown}, but ${ok} writes answered 200`)
  }
  return result
}

/** One autocannon run of `spec` for `seconds`; latencies per kind from its per-response timings. */
function run(spec: LoadSpec, base: string, seconds: number): Promise<ClaimsCase> {
  const times = new Map<string, number[]>(spec.kinds.map((k) => [k, []]))
  const answered = new Map<Client, number>()
  const statuses: Record<string, number> = {}
  let next = 0
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: base,
        connections: spec.connections,
        duration: seconds,
        timeout: 10,
        // Each connection its own user and sequence (pipelining 1: answers come in request order).
        setupClient: (client) => client.setRequests(spec.requests(next++ % spec.connections)),
      },
      (err, r) => {
        running.delete(instance)
        if (err) return reject(err)
        const problems: string[] = []
        const unexpected = Object.keys(statuses).filter((s) => !spec.expected.includes(s))
        if (unexpected.length > 0) problems.push(`unexpected statuses ${unexpected.join(', ')}`)
        if (r.errors + r.timeouts > 0) problems.push(`${r.errors} errors, ${r.timeouts} timeouts`)
        const latency = percentiles(times)
        const requests = r.requests.total
        resolve({
          name: spec.name,
          requests,
          rps: requests / r.duration,
          latency,
          statuses,
          cpuPerRequest: Number.NaN,
          problems,
          judged: spec.connections === CLIENTS && !spec.rate,
        })
      },
    )
    running.add(instance)
    instance.on('response', (client: Client, status: number, _bytes: number, ms: number) => {
      const n = answered.get(client) ?? 0
      answered.set(client, n + 1)
      times.get(spec.kinds[n % spec.kinds.length])!.push(ms)
      statuses[status] = (statuses[status] ?? 0) + 1
    })
  })
}

/**
 * Each connection sends its sequence at `rate` requests per second, evenly spaced and out of phase with
 * the others (autocannon's own rate sends each second's requests in one burst). A request's latency is
 * counted from the moment it was due, so an answer that holds up the next request is not hidden.
 */
async function paced(spec: LoadSpec, base: string, seconds: number, rate: number): Promise<ClaimsCase> {
  const times = new Map<string, number[]>(spec.kinds.map((k) => [k, []]))
  const statuses: Record<string, number> = {}
  const problems: string[] = []
  const interval = 1000 / rate
  const start = performance.now() + 50
  const end = start + seconds * 1000
  let requests = 0
  await Promise.all(
    Array.from({ length: spec.connections }, async (_, c) => {
      const sequence = spec.requests(c)
      for (let n = 0; ; n++) {
        const due = start + (c / spec.connections) * interval + n * interval
        if (due >= end) return
        const wait = due - performance.now()
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        const { method, path, headers, body } = sequence[n % sequence.length]
        try {
          const res = await fetch(`${base}${path}`, { method, headers, body, signal: AbortSignal.timeout(10_000) })
          await res.arrayBuffer()
          times.get(spec.kinds[n % spec.kinds.length])!.push(performance.now() - due)
          statuses[res.status] = (statuses[res.status] ?? 0) + 1
          requests++
        } catch (err) {
          problems.push(`${path}: ${err instanceof Error ? err.message : err}`)
          return
        }
      }
    }),
  )
  const unexpected = Object.keys(statuses).filter((st) => !spec.expected.includes(st))
  if (unexpected.length > 0) problems.push(`unexpected statuses ${unexpected.join(', ')}`)
  return {
    name: spec.name,
    requests,
    rps: requests / seconds,
    latency: percentiles(times),
    statuses,
    cpuPerRequest: Number.NaN,
    problems,
    judged: false,
  }
}

/** p50 and p99 of each kind's latencies. */
function percentiles(times: Map<string, number[]>) {
  return [...times].map(([kind, list]) => {
    const sorted = Float64Array.from(list).sort()
    const pct = (p: number) =>
      sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
    return { kind, count: sorted.length, p50: pct(50), p99: pct(99) }
  })
}

/** The owner's panel of 1,000 imported rows and its view in Rank order, published with `edit`. */
async function seed(base: string, owner: Headers, tenantId: string) {
  const created = await post(base, '/api/panels', owner, JSON.stringify({ name: 'Claims', tenantId, userId: 'claims-owner' }))
  if (created.status !== 201) throw new Error(`panel: ${created.status}`)
  const panelId = created.body.id as number
  for (const [name, sourceField, type] of [
    ['MRN', 'mrn', 'text'],
    ['Rank', 'rank', 'number'],
  ]) {
    const column = await post(base, `/api/panels/${panelId}/columns/base`, owner, JSON.stringify({ name, sourceField, type }))
    if (column.status !== 201) throw new Error(`column ${name}: ${column.status}`)
  }
  const rows = Array.from({ length: ROWS }, (_, i) => ({ mrn: `m${String(i).padStart(4, '0')}`, rank: i }))
  const config = {
    format: 'json',
    mapping: [
      { sourceField: 'mrn', targetColumn: 'MRN' },
      { sourceField: 'rank', targetColumn: 'Rank' },
    ],
  }
  const imported = await post(base, `/api/panels/${panelId}/import`, owner, JSON.stringify({ config, rows }))
  if (imported.status !== 200 || imported.body.rowsImported !== ROWS) throw new Error(`import: ${imported.status}`)
  const view = await post(
    base,
    '/api/views',
    owner,
    JSON.stringify({ name: 'Claims', panelId, sorting: [{ columnTitle: 'Rank', direction: 'asc' }] }),
  )
  if (view.status !== 201) throw new Error(`view: ${view.status}`)
  const viewId = view.body.id as number
  const published = await post(
    base,
    `/api/views/${viewId}/publish`,
    owner,
    JSON.stringify({ publishConfig: { permissions: ['read', 'edit'], userGroups: [] } }),
  )
  if (published.status !== 200) throw new Error(`publish: ${published.status}`)
  const page = await fetch(`${base}/api/views/${viewId}/rows?limit=${CLIENTS + 1}`, { headers: owner })
  const rowIds = ((await page.json()) as { data: { _id: number }[] }).data.map((r) => r._id)
  if (rowIds.length !== CLIENTS + 1) throw new Error(`rows: ${page.status}, ${rowIds.length}`)
  return { viewId, rowIds }
}

/** The work state's version of each row (as the owner reads it). */
async function versions(base: string, owner: Headers, row: (id: number) => string, ids: number[]) {
  return Promise.all(
    ids.map(async (id) => {
      const res = await fetch(`${base}${row(id)}`, { headers: owner })
      if (res.status !== 200) throw new Error(`GET row ${id}: ${res.status}`)
      return ((await res.json()) as { _work: { version: number } })._work.version
    }),
  )
}

async function post(base: string, path: string, headers: Headers, body: string) {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers, body })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}
