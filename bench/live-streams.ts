/**
 * The SSE part of `npm run bench:live` (LIVE.md "Cost"; docs/live.md "Cost"): the real Node server
 * (tsx src/runtime/node.ts) on a libSQL file, one tenant with 10 users, each owning a panel, and a
 * view of user 0 published to the tenant. 1,000 concurrent streams (per user: 40 on /api/events,
 * 40 on the published view's /events, 20 on their own panel's /events) are opened over loopback,
 * then user 0 renames the view BENCH_LIVE_EVENTS times (200; one `view.updated` each, a real write),
 * one every BENCH_LIVE_GAP_MS (50). Measured:
 *   - extra RSS of the server (VmRSS from /proc before the streams and with them open, after a settle);
 *   - latency from the write's request to the event's arrival on each stream that may read it
 *     (an upper bound of commit → stream: it includes the write itself), p50/p99/max.
 * Targets: < 100 MB extra RSS for 1,000 streams; p99 < 100 ms.
 */
import { readFileSync } from 'node:fs'
import { type IncomingMessage, request } from 'node:http'
import { join } from 'node:path'
import { signToken } from '../src/lib/tokens.ts'
import { freePort, startServer, stop } from './lib/processes.ts'
import { BENCH_SECRET, inTempDir } from './lib/temp-dir.ts'

const STREAMS = Number(process.env.BENCH_LIVE_STREAMS ?? 1000)
const EVENTS = Number(process.env.BENCH_LIVE_EVENTS ?? 200)
const GAP_MS = Number(process.env.BENCH_LIVE_GAP_MS ?? 50)
const USERS = 10
const TENANT = 'bench-live'
const root = new URL('..', import.meta.url).pathname

export interface LiveStreamsReport {
  streams: number
  events: number
  rssBeforeMb: number
  rssWithStreamsMb: number
  extraRssMb: number
  deliveries: number
  missing: number
  p50: number
  p99: number
  max: number
  /** The write's own round trip (request to response), p50: part of every latency above. */
  writeP50: number
}

const rssMb = (pid: number) => {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
  return kb / 1024
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN

export function benchLiveStreams(): Promise<LiveStreamsReport> {
  let report: LiveStreamsReport | undefined
  return inTempDir('panels-bench-live-', async (dir) => {
    const port = await freePort()
    const server = await startServer(
      'node server',
      ['--import', 'tsx', join(root, 'src/runtime/node.ts')],
      {
        NODE_ENV: 'development',
        PORT: String(port),
        DATABASE_URL: `file:${join(dir, 'live.db')}`,
        JWT_SECRET: BENCH_SECRET,
        ENCRYPTION_KEY: 'bench-encryption-key',
        LOG_LEVEL: 'warn',
        SYNC_SCHEDULER: 'false',
        RATE_LIMIT_ENABLED: 'false',
      },
      join(dir, 'server.log'),
      port,
      '/health',
    )
    const sockets: IncomingMessage[] = []
    try {
      report = await run(server.url, server.child.pid!, sockets)
    } finally {
      for (const s of sockets) s.destroy()
      await stop(server.child)
    }
  }).then(() => report!)
}

async function run(base: string, pid: number, sockets: IncomingMessage[]): Promise<LiveStreamsReport> {
  const tokens = await Promise.all(
    Array.from({ length: USERS }, (_, u) => signToken(BENCH_SECRET, { tenantId: TENANT, userId: `u${u}` })),
  )
  const call = async (u: number, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens[u]}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`)
    return res.json() as Promise<{ id: number }>
  }
  const panels: number[] = []
  for (let u = 0; u < USERS; u++)
    panels.push((await call(u, 'POST', '/api/panels', { name: `P${u}`, tenantId: TENANT, userId: `u${u}` })).id)
  const view = await call(0, 'POST', '/api/views', { name: 'r0', panelId: panels[0] })
  await call(0, 'POST', `/api/views/${view.id}/publish`, { publishConfig: { permissions: ['read'], userGroups: [] } })

  await sleep(1000)
  const rssBefore = rssMb(pid)
  const sentAt = new Map<string, number>()
  const latencies: number[] = []
  const perEvent = new Map<string, number>()
  const writes: number[] = []
  const expected = { count: 0 }
  const paths = (u: number, i: number) =>
    i % 5 < 2 ? '/api/events' : i % 5 < 4 ? `/api/views/${view.id}/events` : `/api/panels/${panels[u]}/events`
  const opened: Promise<void>[] = []
  for (let i = 0; i < STREAMS; i++) {
    const u = i % USERS
    const path = paths(u, Math.floor(i / USERS))
    if (!path.startsWith('/api/panels') || u === 0) expected.count++
    opened.push(
      new Promise<void>((resolve, reject) => {
        const req = request(`${base}${path}`, {
          headers: { authorization: `Bearer ${tokens[u]}`, accept: 'text/event-stream' },
          agent: false,
        })
        req.on('error', reject)
        req.on('response', (res) => {
          if (res.statusCode !== 200) return reject(new Error(`stream ${path} → ${res.statusCode}`))
          sockets.push(res)
          res.setEncoding('utf8')
          let buffer = ''
          res.on('data', (chunk: string) => {
            buffer += chunk
            for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
              const frame = buffer.slice(0, at)
              buffer = buffer.slice(at + 2)
              const name = /"name":"(r\d+)"/.exec(frame)?.[1]
              const t0 = name ? sentAt.get(name) : undefined
              if (t0 !== undefined) {
                const l = performance.now() - t0
                latencies.push(l)
                if (name) perEvent.set(name, Math.max(perEvent.get(name) ?? 0, l))
              }
            }
          })
          res.on('error', () => {})
          resolve()
        })
        req.end()
      }),
    )
    // Opened in waves, as clients arrive, rather than 1,000 handshakes in one tick.
    if (i % 100 === 99) await Promise.all(opened.slice(-100))
  }
  await Promise.all(opened)
  await sleep(2000)
  const rssWith = rssMb(pid)

  for (let e = 1; e <= EVENTS; e++) {
    const name = `r${e}`
    const t0 = performance.now()
    sentAt.set(name, t0)
    await call(0, 'PUT', `/api/views/${view.id}`, { name })
    writes.push(performance.now() - t0)
    await sleep(GAP_MS)
  }
  await sleep(1500)
  const sorted = [...latencies].sort((a, b) => a - b)
  if (process.env.BENCH_LIVE_DEBUG) console.log([...perEvent].map(([n, l]) => `${n}:${l.toFixed(0)}`).join(' '))
  return {
    streams: STREAMS,
    events: EVENTS,
    rssBeforeMb: rssBefore,
    rssWithStreamsMb: rssWith,
    extraRssMb: rssWith - rssBefore,
    deliveries: latencies.length,
    missing: expected.count * EVENTS - latencies.length,
    p50: pct(sorted, 50),
    p99: pct(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    writeP50: pct(
      [...writes].sort((a, b) => a - b),
      50,
    ),
  }
}

/** The report as the table `bench:live` prints. */
export function liveStreamsTable(r: LiveStreamsReport): string {
  const rows = [
    ['measure', 'value', 'target', 'result'],
    ['server RSS before streams', `${r.rssBeforeMb.toFixed(1)} MB`, '', ''],
    [`server RSS with ${r.streams} streams`, `${r.rssWithStreamsMb.toFixed(1)} MB`, '', ''],
    [`extra RSS for ${r.streams} streams`, `${r.extraRssMb.toFixed(1)} MB`, '< 100 MB', r.extraRssMb < 100 ? 'pass' : 'FAIL'],
    [`deliveries (${r.events} events)`, `${r.deliveries} (${r.missing} missing)`, '0 missing', r.missing === 0 ? 'pass' : 'FAIL'],
    ['write → stream p50', `${r.p50.toFixed(1)} ms`, '', ''],
    ['write → stream p99', `${r.p99.toFixed(1)} ms`, '< 100 ms', r.p99 < 100 ? 'pass' : 'FAIL'],
    ['write → stream max', `${r.max.toFixed(1)} ms`, '', ''],
    ['the write itself (PUT round trip) p50', `${r.writeP50.toFixed(1)} ms`, '', ''],
  ]
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)))
  const line = (row: string[]) => row.map((c, i) => c.padEnd(widths[i])).join('  ')
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n')
}
