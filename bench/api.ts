/**
 * `npm run bench:api` (issue item 13): builds the service, starts the built server and a bare Hono
 * route as two child processes on loopback, seeds 1,000 panels for one tenant/user, and loads each
 * case with autocannon (10 connections) right after a run of the bare route, so every ratio compares
 * two runs made under the same machine conditions. Then the claims (bench/claims.ts): a claim's p50/p99
 * at 10 concurrent users, each on a row of their own and all on one row. Options (env): BENCH_SECONDS
 * (8), BENCH_WARMUP (2), BENCH_ROUNDS (1; with more, each case reports its median-ratio round),
 * BENCH_NO_BUILD=1, BENCH_ONLY=panels|claims (one part), LOG_LEVEL (info).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { signToken } from '../src/lib/tokens.ts'
import { benchClaims, claimsPass, claimsTable } from './claims.ts'
import { type LoadCase, type LoadResult, load, stopAllLoads } from './lib/load.ts'
import { freePort, killAllNow, startServer, stopAll } from './lib/processes.ts'
import { type CaseReport, type CaseTarget, judge, table } from './lib/report.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2)
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1))
const LOG_LEVEL = process.env.LOG_LEVEL ?? 'info'
const ONLY = process.env.BENCH_ONLY
const SEED = 1000
const TENANT = 'bench-tenant'
const USER = 'bench-user'
const WRITER = 'bench-writer'
const JWT_SECRET = 'bench-secret-0123456789-0123456789-abcdef'
const root = new URL('..', import.meta.url).pathname

interface Case {
  name: string
  target: CaseTarget
  request: LoadCase
}

async function main() {
  if (process.env.BENCH_NO_BUILD !== '1') {
    const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' })
    if (built.status !== 0) throw new Error('npm run build failed')
  }
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-'))
  try {
    await run(dir)
  } finally {
    stopAllLoads()
    await stopAll()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function run(dir: string) {
  const [apiPort, barePort] = [await freePort(), await freePort()]
  const serverLog = join(dir, 'server.log')
  const api = await startServer(
    'built server',
    [join(root, 'dist/runtime/node.js')],
    {
      NODE_ENV: 'development',
      PORT: String(apiPort),
      DATABASE_URL: `file:${join(dir, 'b.db')}`,
      JWT_SECRET,
      ENCRYPTION_KEY: 'bench-encryption-key',
      LOG_LEVEL,
      SYNC_SCHEDULER: 'false',
      RATE_LIMIT_ENABLED: 'false',
    },
    serverLog,
    apiPort,
    '/health',
  )
  const bare = await startServer(
    'bare Hono',
    ['--import', 'tsx', join(root, 'bench/bare-server.ts')],
    { PORT: String(barePort) },
    join(dir, 'bare.log'),
    barePort,
    '/',
  )

  const auth = async (userId: string) => ({
    authorization: `Bearer ${await signToken(JWT_SECRET, { tenantId: TENANT, userId })}`,
    'content-type': 'application/json',
  })
  let pass = true
  if (ONLY !== 'claims') pass = await panelCases(api.url, bare.url, auth, serverLog)
  if (ONLY !== 'panels') {
    console.log(`\nClaims: one user alone, then 10 at once (bench/claims.ts), ${WARMUP} s warm-up + ${SECONDS} s per load\n`)
    const claims = await benchClaims(api.url, auth, TENANT, SECONDS, WARMUP, () => cpuMs(api.child.pid))
    console.log(`${claimsTable(claims)}\n`)
    pass = claimsPass(claims) && pass
  }
  console.log(`node ${process.version}; results are printed only, not stored`)
  process.exitCode = pass ? 0 : 1
}

/** The panel cases, each beside a bare run; true when all pass. */
async function panelCases(
  base: string,
  bareBase: string,
  auth: (userId: string) => Promise<Record<string, string>>,
  serverLog: string,
) {
  const api = { url: base }
  const bare = { url: bareBase }
  const reader = await auth(USER)
  const writer = await auth(WRITER)
  const firstId = await seed(api.url, reader)
  await verify(api.url, reader, firstId)

  const cases: Case[] = [
    {
      name: 'GET /api/panels/{id}',
      target: { minRatio: 0.2, maxP99: 5 },
      request: { url: `${api.url}/api/panels/${firstId + 500}`, headers: reader },
    },
    {
      name: 'GET /api/panels?limit=50',
      target: { minRatio: 0.05 },
      request: { url: `${api.url}/api/panels?tenantId=${TENANT}&userId=${USER}&limit=50`, headers: reader },
    },
    {
      name: 'POST /api/panels',
      target: { minRatio: 0.04 },
      request: {
        url: `${api.url}/api/panels`,
        method: 'POST',
        headers: writer,
        body: JSON.stringify({ name: 'Bench panel', description: 'load', tenantId: TENANT, userId: WRITER }),
      },
    },
  ]
  const bareCase: LoadCase = { url: `${bare.url}/` }

  console.log(
    `\nload: autocannon, 10 connections, ${WARMUP} s warm-up + ${SECONDS} s per run, ${ROUNDS} round(s); LOG_LEVEL=${LOG_LEVEL}\n`,
  )
  const rounds: CaseReport[][] = cases.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of cases.entries()) {
      const b = await measure(bareCase)
      const r = await measure(c.request)
      const report = judge(c.name, b, r, c.target)
      rounds[i].push(report)
      console.log(
        `  round ${round + 1} ${c.name}: ${r.rps.toFixed(0)} req/s vs bare ${b.rps.toFixed(0)} → ${report.ratio.toFixed(3)}`,
      )
    }
  }
  const reports = rounds.map((rs) => [...rs].sort((a, b) => a.ratio - b.ratio)[Math.floor(rs.length / 2)])
  console.log(`\n${table(reports)}\n`)
  if (LOG_LEVEL === 'info' || LOG_LEVEL === 'debug') {
    const requestLines = readFileSync(serverLog, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"msg":"request"')).length
    console.log(`server wrote ${requestLines} access-log lines (one per request) to its stdout`)
  }
  return reports.every((r) => r.pass)
}

/** A process's CPU time so far (user + system, ms) from /proc (Linux); NaN elsewhere. */
function cpuMs(pid: number | undefined): number {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks (100/s).
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return Number.NaN
  }
}

async function measure(c: LoadCase): Promise<LoadResult> {
  if (WARMUP > 0) await load(c, WARMUP)
  return load(c, SECONDS)
}

/** 1,000 panels for the reader through the API (10 at a time); returns the first id. */
async function seed(base: string, headers: Record<string, string>) {
  const ids: number[] = []
  for (let i = 0; i < SEED; i += 10) {
    const batch = Array.from({ length: Math.min(10, SEED - i) }, async (_, j) => {
      const res = await fetch(`${base}/api/panels`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: `Panel ${i + j}`, description: 'seeded for the benchmark', tenantId: TENANT, userId: USER }),
      })
      if (res.status !== 201) throw new Error(`seeding failed: ${res.status} ${await res.text()}`)
      ids.push(((await res.json()) as { id: number }).id)
    })
    await Promise.all(batch)
  }
  return Math.min(...ids)
}

/** Each case answers correctly before it is loaded: a fast wrong answer is no result. */
async function verify(base: string, headers: Record<string, string>, firstId: number) {
  const one = await fetch(`${base}/api/panels/${firstId + 500}`, { headers })
  const panel = (await one.json()) as { id: number; tenantId: string }
  if (one.status !== 200 || panel.id !== firstId + 500 || panel.tenantId !== TENANT) throw new Error(`GET one: ${one.status}`)
  const list = await fetch(`${base}/api/panels?tenantId=${TENANT}&userId=${USER}&limit=50`, { headers })
  const items = (await list.json()) as unknown[]
  if (list.status !== 200 || items.length !== 50 || list.headers.get('x-total-count') !== String(SEED))
    throw new Error(`GET list: ${list.status}, ${items.length} items, total ${list.headers.get('x-total-count')}`)
  const other = await fetch(`${base}/api/panels/${firstId}`, {
    headers: { authorization: `Bearer ${await signToken(JWT_SECRET, { tenantId: 'other-tenant', userId: USER })}` },
  })
  if (other.status !== 404) throw new Error(`another tenant's read answered ${other.status}, expected 404`)
}

const abort = () => {
  stopAllLoads()
  killAllNow()
  process.exit(130)
}
process.on('SIGINT', abort)
process.on('SIGTERM', abort)
process.on('exit', killAllNow)

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err)
  process.exitCode = 1
})
