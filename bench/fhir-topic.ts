/**
 * `npm run bench:fhir:topic` (FHIR-EXCHANGE.md "View membership as a Subscriptions-backport topic";
 * docs/fhir.md): row.entered → backport notification received, with BENCH_TOPIC_SUBS (100)
 * Subscriptions on one view. The real Node server (tsx src/runtime/node.ts) on a libSQL file; the
 * receivers are one HTTP server in this process on 127.0.0.1 (one path per subscription). After the
 * handshakes, BENCH_TOPIC_ROUNDS (20) rows are imported one at a time through the API, one every
 * BENCH_TOPIC_GAP_MS (500); each row enters the view, so every subscription gets one notification
 * per row. Measured per (row, subscription): the time from the import request to the notification's
 * arrival (an upper bound of commit → notification: it includes the write itself); p50, p95, max,
 * the server's CPU time per notification (user + system over the rows' phase: the machine-independent
 * cost) and its peak RSS (VmHWM). Target: p95 ≤ 1 s.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { signToken } from '../src/lib/tokens.ts'
import { freePort, killAllNow, startServer, stop } from './lib/processes.ts'
import { BENCH_SECRET, inTempDir } from './lib/temp-dir.ts'

const SUBS = Number(process.env.BENCH_TOPIC_SUBS ?? 100)
const ROUNDS = Number(process.env.BENCH_TOPIC_ROUNDS ?? 20)
const GAP_MS = Number(process.env.BENCH_TOPIC_GAP_MS ?? 500)
const TENANT = 'bench-topic'
const IG = 'http://hl7.org/fhir/uv/subscriptions-backport/StructureDefinition'
const root = new URL('..', import.meta.url).pathname

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
/** The server's CPU time so far (user + system), in ms, from /proc (clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const kbOf = (pid: number, field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])

interface Report {
  handshakesMs: number
  expected: number
  received: number
  p50: number
  p95: number
  max: number
  writeP50: number
  /** The server's CPU time over the rows' phase per notification received. */
  cpuPerNotificationMs: number
  peakRssMb: number
}

/** One receiver for every subscription: notes each notification's arrival by (path, focus). */
async function startReceivers() {
  const arrivals = new Map<string, number>()
  let handshakes = 0
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const at = performance.now()
      res.writeHead(200).end()
      const bundle = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      const status = bundle.entry[0].resource.parameter as { name: string; valueCode?: string; part?: any[] }[]
      const type = status.find((p) => p.name === 'type')?.valueCode
      if (type === 'handshake') handshakes++
      for (const event of status.filter((p) => p.name === 'notification-event')) {
        const focus = event.part?.find((p: { name: string }) => p.name === 'focus')?.valueReference?.reference
        arrivals.set(`${req.url}|${focus}`, at)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, arrivals, handshakes: () => handshakes, close: () => new Promise((r) => server.close(r)) }
}

async function run(base: string, pid: number): Promise<Report> {
  const token = await signToken(BENCH_SECRET, { tenantId: TENANT, userId: 'u0' })
  const call = async (method: string, path: string, body?: unknown, type = 'application/json') => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': type },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`)
    return res.json() as Promise<any>
  }
  const receivers = await startReceivers()
  try {
    const panel = await call('POST', '/api/panels', { name: 'Topic bench', tenantId: TENANT, userId: 'u0' })
    for (const name of ['Name', 'Patient']) {
      await call('POST', `/api/panels/${panel.id}/columns/base`, { name, sourceField: name.toLowerCase() })
    }
    const workflow = await call('GET', `/api/panels/${panel.id}/workflow`)
    await call('PUT', `/api/panels/${panel.id}/workflow`, { ...workflow, patientReference: 'Patient' })
    const view = await call('POST', '/api/views', { name: 'Everyone', panelId: panel.id })
    const topic = `${base}/fhir/SubscriptionTopic/view-membership`
    const started = performance.now()
    for (let s = 0; s < SUBS; s++) {
      await call(
        'POST',
        '/fhir/Subscription',
        {
          resourceType: 'Subscription',
          status: 'requested',
          reason: 'bench',
          criteria: topic,
          _criteria: { extension: [{ url: `${IG}/backport-filter-criteria`, valueString: `Group?_id=${view.id}` }] },
          channel: {
            type: 'rest-hook',
            endpoint: `${receivers.url}/s${s}`,
            payload: 'application/fhir+json',
            _payload: { extension: [{ url: `${IG}/backport-payload-content`, valueCode: 'id-only' }] },
          },
        },
        'application/fhir+json',
      )
    }
    for (let waited = 0; receivers.handshakes() < SUBS && waited < 60_000; waited += 50) await sleep(50)
    if (receivers.handshakes() < SUBS) throw new Error(`only ${receivers.handshakes()} of ${SUBS} handshakes arrived`)
    const handshakesMs = performance.now() - started

    const mapping = [
      { sourceField: 'name', targetColumn: 'Name' },
      { sourceField: 'patient', targetColumn: 'Patient' },
    ]
    const sentAt = new Map<string, number>()
    const writes: number[] = []
    const cpuBefore = cpuMs(pid)
    for (let r = 0; r < ROUNDS; r++) {
      const patient = `Patient/b${r}`
      const t0 = performance.now()
      sentAt.set(patient, t0)
      await call('POST', `/api/panels/${panel.id}/import`, {
        config: { format: 'json', mapping },
        rows: [{ name: `R${r}`, patient }],
      })
      writes.push(performance.now() - t0)
      await sleep(GAP_MS)
    }
    const expected = SUBS * ROUNDS
    for (let waited = 0; receivers.arrivals.size < expected && waited < 30_000; waited += 100) await sleep(100)
    const cpu = cpuMs(pid) - cpuBefore
    const latencies: number[] = []
    for (const [key, at] of receivers.arrivals) {
      const t0 = sentAt.get(key.split('|')[1])
      if (t0 !== undefined) latencies.push(at - t0)
    }
    const sorted = latencies.sort((a, b) => a - b)
    return {
      handshakesMs,
      expected,
      received: latencies.length,
      p50: pct(sorted, 50),
      p95: pct(sorted, 95),
      max: sorted.at(-1) ?? Number.NaN,
      writeP50: pct(
        [...writes].sort((a, b) => a - b),
        50,
      ),
      cpuPerNotificationMs: cpu / Math.max(1, latencies.length),
      peakRssMb: kbOf(pid, 'VmHWM') / 1024,
    }
  } finally {
    await receivers.close()
  }
}

function table(r: Report): string {
  const rows = [
    ['measure', 'value', 'target', 'result'],
    [`${SUBS} subscriptions created, handshakes received`, `${(r.handshakesMs / 1000).toFixed(1)} s`, '', ''],
    [
      `notifications (${ROUNDS} rows × ${SUBS} subscriptions)`,
      `${r.received} of ${r.expected}`,
      'all',
      r.received === r.expected ? 'pass' : 'FAIL',
    ],
    ['row.entered → notification p50', `${r.p50.toFixed(1)} ms`, '', ''],
    ['row.entered → notification p95', `${r.p95.toFixed(1)} ms`, '≤ 1000 ms', r.p95 <= 1000 ? 'pass' : 'FAIL'],
    ['row.entered → notification max', `${r.max.toFixed(1)} ms`, '', ''],
    ['the write itself (import round trip) p50', `${r.writeP50.toFixed(1)} ms`, '', ''],
    ['server CPU per notification (rows phase, imports included)', `${r.cpuPerNotificationMs.toFixed(2)} ms`, '', ''],
    ['server peak RSS (VmHWM)', `${r.peakRssMb.toFixed(1)} MB`, '', ''],
  ]
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)))
  const line = (row: string[]) => row.map((c, i) => c.padEnd(widths[i])).join('  ')
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n')
}

async function main() {
  process.once('exit', killAllNow)
  let report: Report | undefined
  await inTempDir('panels-bench-topic-', async (dir) => {
    const port = await freePort()
    const server = await startServer(
      'node server',
      ['--import', 'tsx', join(root, 'src/runtime/node.ts')],
      {
        NODE_ENV: 'development',
        PORT: String(port),
        DATABASE_URL: `file:${join(dir, 'topic.db')}`,
        JWT_SECRET: BENCH_SECRET,
        ENCRYPTION_KEY: 'bench-encryption-key',
        LOG_LEVEL: 'warn',
        RATE_LIMIT_ENABLED: 'false',
        ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
      },
      join(dir, 'server.log'),
      port,
      '/health',
    )
    try {
      report = await run(server.url, server.child.pid!)
    } finally {
      await stop(server.child)
    }
  })
  console.log(`\nView membership as a backport topic: ${SUBS} subscriptions on one view, ${ROUNDS} rows entering\n`)
  console.log(table(report!))
  if (report!.received !== report!.expected || report!.p95 > 1000) process.exitCode = 1
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
