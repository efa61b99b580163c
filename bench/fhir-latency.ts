/**
 * `npm run bench:fhir:latency` (issue 23, "Latency"; docs/connectors-fhir.md "Subscription mode"):
 * the real Node server (tsx src/runtime/node.ts) on a libSQL file with PUBLIC_BASE_URL pointing at
 * it, the loopback FHIR Subscription fixture (tests/helpers/fhir-subscription-server.ts) and one
 * SSE client on the panel's change feed. For each payload (`full-resource`, then `id-only`, whose
 * resources the service reads back with the source's bearer token) a live `fhir` source is made,
 * its handshake awaited, then BENCH_FHIR_CHANGES (60) new Patients are stored on the fixture one
 * after another, every BENCH_FHIR_GAP_MS (20): the time from the change on the server (just before
 * its notification is sent) to that row's `row.entered` frame on the stream is measured.
 * Goals: p95 ≤ 1 s with full-resource payloads, ≤ 1.5 s id-only.
 */
import { readFileSync } from 'node:fs'
import { type IncomingMessage, request } from 'node:http'
import { join } from 'node:path'
import { signToken } from '../src/lib/tokens.ts'
import { startSubscriptionServer } from '../tests/helpers/fhir-subscription-server.ts'
import { freePort, killAllNow, startServer, stop } from './lib/processes.ts'
import { BENCH_SECRET, inTempDir } from './lib/temp-dir.ts'

const CHANGES = Number(process.env.BENCH_FHIR_CHANGES ?? 60)
const GAP_MS = Number(process.env.BENCH_FHIR_GAP_MS ?? 20)
const TENANT = 'bench-fhir'
const TOKEN = 'bench-upstream-token'
const root = new URL('..', import.meta.url).pathname
const GOALS = { 'full-resource': 1000, 'id-only': 1500 } as const

type Payload = keyof typeof GOALS

interface Figures {
  payload: Payload
  changes: number
  arrived: number
  p50: number
  p95: number
  max: number
  /** The notification's own round trip (fixture POST to the receiver's answer), p50. */
  notifyP50: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

async function main() {
  const figures: Figures[] = []
  let peakRss = 0
  await inTempDir('panels-bench-fhir-', async (dir) => {
    const fx = await startSubscriptionServer({ token: TOKEN })
    const port = await freePort()
    const server = await startServer(
      'node server',
      ['--import', 'tsx', join(root, 'src/runtime/node.ts')],
      {
        NODE_ENV: 'development',
        PORT: String(port),
        DATABASE_URL: `file:${join(dir, 'fhir.db')}`,
        JWT_SECRET: BENCH_SECRET,
        ENCRYPTION_KEY: 'bench-encryption-key',
        LOG_LEVEL: 'warn',
        SYNC_SCHEDULER: 'false',
        RATE_LIMIT_ENABLED: 'false',
        ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      },
      join(dir, 'server.log'),
      port,
      '/health',
    )
    const sockets: IncomingMessage[] = []
    const rssTimer = setInterval(() => {
      peakRss = Math.max(peakRss, rssMb(server.child.pid!))
    }, 100)
    try {
      const token = await signToken(BENCH_SECRET, { tenantId: TENANT, userId: 'u0' })
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`)
        return res.status === 204 ? undefined : (res.json() as Promise<Record<string, any>>)
      }
      for (const payload of ['full-resource', 'id-only'] as const) {
        fx.reset()
        const panel = (await call('POST', '/api/panels', { name: `Live ${payload}`, tenantId: TENANT, userId: 'u0' }))!
        await call('POST', '/api/views', { name: 'Everyone', panelId: panel.id })
        const source = (await call('POST', `/api/panels/${panel.id}/datasources`, {
          type: 'fhir',
          config: {
            baseUrl: fx.baseUrl,
            resourceType: 'Patient',
            authentication: { type: 'bearer', token: TOKEN },
            subscription: { topic: 'http://example.org/SubscriptionTopic/patient', payload },
          },
          tenantId: TENANT,
          userId: 'u0',
        }))!
        if (source.syncStatus !== 'success' || source.subscriptionStatus?.id == null) {
          throw new Error(`source not live: ${JSON.stringify(source)}`)
        }
        const deadline = Date.now() + 5000
        while (fx.only().status !== 'active') {
          if (Date.now() > deadline) throw new Error('no handshake')
          await sleep(10)
        }
        const arrivedAt = new Map<string, number>()
        const stream = await openStream(`${server.url}/api/panels/${panel.id}/events`, token, (frame) => {
          if (!frame.includes('row.entered')) return
          for (const m of frame.matchAll(/lat-\d+-\d+/g)) if (!arrivedAt.has(m[0])) arrivedAt.set(m[0], performance.now())
        })
        sockets.push(stream)
        const changedAt = new Map<string, number>()
        const notify: number[] = []
        for (let i = 0; i < CHANGES; i++) {
          const id = `lat-${payload === 'id-only' ? 2 : 1}-${i}`
          changedAt.set(id, performance.now())
          const [sent] = await fx.change({ resourceType: 'Patient', id, active: true, name: [{ family: `Latency ${i}` }] })
          if (sent?.status !== 200) throw new Error(`notification ${id} answered ${sent?.status}: ${JSON.stringify(sent?.body)}`)
          notify.push(sent.ms)
          await sleep(GAP_MS)
        }
        const end = Date.now() + 5000
        while (arrivedAt.size < CHANGES && Date.now() < end) await sleep(20)
        const latencies = [...changedAt]
          .flatMap(([id, t0]) => (arrivedAt.has(id) ? [arrivedAt.get(id)! - t0] : []))
          .sort((a, b) => a - b)
        const sortedNotify = notify.sort((a, b) => a - b)
        figures.push({
          payload,
          changes: CHANGES,
          arrived: latencies.length,
          p50: pct(latencies, 50),
          p95: pct(latencies, 95),
          max: latencies.at(-1) ?? Number.NaN,
          notifyP50: pct(sortedNotify, 50),
        })
        stream.destroy()
        await call('DELETE', `/api/datasources/${source.id}`, { tenantId: TENANT, userId: 'u0' })
      }
    } finally {
      clearInterval(rssTimer)
      for (const s of sockets) s.destroy()
      await stop(server.child)
      await fx.close()
    }
  })
  const ms = (n: number) => `${n.toFixed(1)} ms`
  console.log(`FHIR Subscription → row.entered on SSE, ${CHANGES} changes each, one every ${GAP_MS} ms, loopback\n`)
  console.log('| payload | arrived | p50 | p95 | max | notification round trip p50 | goal (p95) |')
  console.log('|---|---|---|---|---|---|---|')
  for (const f of figures) {
    const goal = GOALS[f.payload]
    const ok = f.arrived === f.changes && f.p95 <= goal
    console.log(
      `| ${f.payload} | ${f.arrived}/${f.changes} | ${ms(f.p50)} | ${ms(f.p95)} | ${ms(f.max)} | ${ms(f.notifyP50)} | ≤ ${goal} ms: ${ok ? 'pass' : 'FAIL'} |`,
    )
  }
  console.log(`\nPeak RSS of the server: ${peakRss.toFixed(0)} MiB`)
}

/** An SSE stream of the change feed; `onFrame` sees each frame's text. */
function openStream(url: string, token: string, onFrame: (frame: string) => void): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, agent: false })
    req.on('error', reject)
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`stream ${url} → ${res.statusCode}`))
      res.setEncoding('utf8')
      let buffer = ''
      res.on('data', (chunk: string) => {
        buffer += chunk
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          onFrame(buffer.slice(0, at))
          buffer = buffer.slice(at + 2)
        }
      })
      res.on('error', () => {})
      resolve(res)
    })
    req.end()
  })
}

process.on('exit', killAllNow)
main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
