/**
 * `npm run bench:fhir:export` (issue 24, benchmarks): async `$viewdefinition-export` of
 * BENCH_EXPORT_SIZE generated Patients (default 1,000,000; bench/lib/sof-patients.ts) held as a data
 * source's records in a libSQL file database (WAL), beside `$viewdefinition-run` to CSV of the same
 * input, in the same run. The view has two forEach levels (one row per given name of each name).
 * Each case runs in a fresh child process, whose peak RSS (VmHWM) is reported:
 *   - run: `POST /api/$viewdefinition-run` (source, csv), the body read to its end;
 *   - export: `POST /api/$viewdefinition-export` (source, csv) with FILES_DIR on a temporary folder,
 *     the status URL polled every 100 ms until the manifest, then the file downloaded to its end.
 * Reported: resources/s of each (the export's from kick-off to manifest, and with its download),
 * rows, the export's part files, and peak RSS. The row counts of both must equal the hand count.
 * BENCH_EXPORT_TRACE=1 prints the export process's memory at each poll (stderr).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { createApp } from '../src/app.ts'
import { parseConfig } from '../src/config.ts'
import { buildDeps } from '../src/deps.ts'
import { createLogger } from '../src/lib/logger.ts'
import { signToken } from '../src/lib/tokens.ts'
import { insertRowStatements } from '../src/rowstore/record-sql.ts'
import { nodeFileStore } from '../src/runtime/node-files.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'
import { sofPatient } from './lib/sof-patients.ts'

const SIZE = Number(process.env.BENCH_EXPORT_SIZE ?? 1_000_000)
const SECRET = 'bench-secret-0123456789-0123456789-abcdef'

const NAMES_VIEW = {
  resourceType: 'ViewDefinition',
  name: 'patient_given_names',
  status: 'active',
  resource: 'Patient',
  select: [
    { column: [{ name: 'id', path: 'id' }] },
    {
      forEach: 'name',
      column: [{ name: 'family', path: 'family' }],
      select: [{ forEach: 'given', column: [{ name: 'given', path: '$this' }] }],
    },
  ],
}

interface CaseResult {
  seconds: number
  rows: number
  peakRssMiB: number
  exportSeconds?: number
  parts?: number
}

async function main() {
  if (process.argv[2] === '--case')
    return childCase(process.argv[3] as 'run' | 'export', process.argv[4], Number(process.argv[5]))
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-export-'))
  try {
    const seeded = performance.now()
    const { file, sourceId, expected } = await seed(dir, SIZE)
    console.log(
      `seeded ${SIZE.toLocaleString('en')} Patients (${expected.toLocaleString('en')} rows) in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
    )
    const child = (kind: string): CaseResult =>
      JSON.parse(
        execFileSync(
          process.execPath,
          ['--import', 'tsx', new URL(import.meta.url).pathname, '--case', kind, file, String(sourceId)],
          {
            encoding: 'utf8',
            maxBuffer: 1 << 20,
            env: { ...process.env, BENCH_FILES_DIR: join(dir, 'files') },
          },
        ),
      )
    const run = child('run')
    const exp = child('export')
    for (const [name, result] of [
      ['run', run],
      ['export', exp],
    ] as const) {
      if (result.rows !== expected) throw new Error(`${name} gave ${result.rows} rows, not ${expected}`)
    }
    const k = (r: number) => `${Math.round(r / 1000).toLocaleString('en')}k`
    console.log('\nresources/s (k = thousand); peak RSS of the case’s process')
    console.log('| case | Patients | rows | resources/s | seconds | peak RSS MiB |')
    console.log('|---|---|---|---|---|---|')
    console.log(
      `| $viewdefinition-run → CSV | ${SIZE.toLocaleString('en')} | ${run.rows.toLocaleString('en')} | ${k(SIZE / run.seconds)} | ${run.seconds.toFixed(1)} | ${run.peakRssMiB.toFixed(0)} |`,
    )
    console.log(
      `| $viewdefinition-export → CSV (kick-off to manifest, ${exp.parts} parts) | ${SIZE.toLocaleString('en')} | ${exp.rows.toLocaleString('en')} | ${k(SIZE / exp.exportSeconds!)} | ${exp.exportSeconds!.toFixed(1)} | ${exp.peakRssMiB.toFixed(0)} |`,
    )
    console.log(
      `| $viewdefinition-export + download | ${SIZE.toLocaleString('en')} | ${exp.rows.toLocaleString('en')} | ${k(SIZE / exp.seconds)} | ${exp.seconds.toFixed(1)} | (same process) |`,
    )
    console.log(
      `export / run resources/s = ${(run.seconds / exp.exportSeconds!).toFixed(2)}; peak RSS export / run = ${(exp.peakRssMiB / run.peakRssMiB).toFixed(2)}`,
    )
  } finally {
    if (process.env.BENCH_KEEP_DIR) console.log(`kept ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  }
}

/** A libSQL file database with one data source holding `size` distinct Patients as its records. */
async function seed(dir: string, size: number) {
  const file = join(dir, 'export.db')
  const { deps, call, client } = await appOn(file)
  const panel = await call('POST', '/api/panels', { name: 'Export bench', tenantId: 'bench', userId: 'bench' })
  // A FHIR source whose server is unreachable: no records of its own; the bench writes them as a sync stores them.
  const source = await call('POST', `/api/panels/${panel.id}/datasources`, {
    type: 'fhir',
    config: { baseUrl: 'http://127.0.0.1:9/fhir', resourceTypes: ['Patient'] },
  })
  const now = '2026-11-01T10:00:00.000Z'
  const target = { tenantId: 'bench', panelId: panel.id, dataSourceId: source.id, generation: 0 }
  let expected = 0
  for (let start = 0; start < size; start += 20_000) {
    const rows = []
    for (let i = start; i < Math.min(size, start + 20_000); i++) {
      const resource = sofPatient(i)
      for (const name of resource.name ?? []) expected += (name.given ?? []).length
      rows.push({ key: `Patient/pat-${i}`, data: JSON.stringify(resource), cells: '{}', errors: 'null' })
    }
    await deps.db.batch(insertRowStatements(target, rows, 0, now, 'replace').map((s) => deps.db.run(s)) as never)
  }
  await client.execute('PRAGMA wal_checkpoint(TRUNCATE)')
  client.close()
  return { file, sourceId: source.id as number, expected }
}

async function appOn(file: string, filesDir?: string) {
  const config = parseConfig({
    DATABASE_URL: `file:${file}`,
    JWT_SECRET: SECRET,
    ENCRYPTION_KEY: 'bench-encryption-key',
    LOG_LEVEL: 'error',
    SYNC_SCHEDULER: 'false',
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
  })
  const { db, client } = await openDatabase(config)
  const files = filesDir ? nodeFileStore(filesDir) : undefined
  const deps = await buildDeps(config, {
    db,
    files,
    storage: createStorage({ driver: memoryDriver() }),
    log: createLogger('error'),
  })
  const app = createApp(() => deps)
  const token = await signToken(SECRET, { tenantId: 'bench', userId: 'bench' })
  const request = (method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await request(method, path, body)
    if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`)
    return res.json() as Promise<any>
  }
  return { app, deps, call, request, client }
}

/** This process's peak RSS: VmHWM on Linux (see bench/sof.ts for why not getrusage). */
function peakRssMiB(): number {
  try {
    const hwm = readFileSync('/proc/self/status', 'utf8').match(/VmHWM:\s+(\d+) kB/)
    if (hwm) return Number(hwm[1]) / 1024
  } catch {}
  return process.resourceUsage().maxRSS / 1024
}

/** With BENCH_EXPORT_TRACE: this process's memory now, and its peak so far (stderr). */
function trace(what: string) {
  if (!process.env.BENCH_EXPORT_TRACE) return
  const m = process.memoryUsage()
  const mib = (n: number) => (n / 2 ** 20).toFixed(0)
  console.error(
    `${what}: rss ${mib(m.rss)} MiB (peak ${peakRssMiB().toFixed(0)}), heap used ${mib(m.heapUsed)} MiB, array buffers ${mib(m.arrayBuffers)} MiB`,
  )
}

/** Counts the lines of a body read to its end. */
async function lines(body: ReadableStream<Uint8Array>) {
  let count = 0
  const reader = body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return count
    for (let i = 0; i < value.length; i++) if (value[i] === 10) count++
  }
}

/** The child process: one case; prints seconds, rows (the header line excepted) and peak RSS. */
async function childCase(kind: 'run' | 'export', file: string, sourceId: number) {
  const filesDir = process.env.BENCH_FILES_DIR!
  mkdirSync(filesDir, { recursive: true })
  const { request } = await appOn(file, filesDir)
  const parameters = {
    resourceType: 'Parameters',
    parameter: [
      ...(kind === 'run'
        ? [{ name: 'viewResource', resource: NAMES_VIEW }]
        : [{ name: 'view', part: [{ name: 'viewResource', resource: NAMES_VIEW }] }]),
      { name: 'source', valueString: String(sourceId) },
      { name: '_format', valueCode: 'csv' },
    ],
  }
  const t0 = performance.now()
  const result: CaseResult = { seconds: 0, rows: 0, peakRssMiB: 0 }
  if (kind === 'run') {
    const res = await request('POST', '/api/$viewdefinition-run', parameters)
    if (res.status !== 200) throw new Error(`run → ${res.status}: ${await res.text()}`)
    result.rows = (await lines(res.body!)) - 1
  } else {
    const kicked = await request('POST', '/api/$viewdefinition-export', parameters)
    if (kicked.status !== 202) throw new Error(`export → ${kicked.status}: ${await kicked.text()}`)
    const location = kicked.headers.get('content-location')!
    trace('kicked off')
    let manifest: any
    for (;;) {
      const poll = await request('GET', location)
      if (poll.status === 200) {
        manifest = await poll.json()
        break
      }
      if (poll.status !== 202) throw new Error(`poll → ${poll.status}: ${await poll.text()}`)
      trace(poll.headers.get('x-progress') ?? 'poll')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    result.exportSeconds = (performance.now() - t0) / 1000
    trace('manifest')
    result.parts = readdirSync(join(filesDir, 'exports', manifest.exportId)).length
    const file = await request('GET', manifest.output[0].url)
    result.rows = (await lines(file.body!)) - 1
    trace('downloaded')
  }
  result.seconds = (performance.now() - t0) / 1000
  result.peakRssMiB = peakRssMiB()
  process.stdout.write(JSON.stringify(result))
  process.exit(0)
}

await main()
