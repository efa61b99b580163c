/**
 * `npm run bench:sof` (issue 14 point 6): SQL-on-FHIR ViewDefinitions over generated Patients
 * (bench/lib/sof-patients.ts), two views — two forEach levels (one row per given name of each
 * name) and a unionAll of telecom and address — at each size of BENCH_SOF_SIZES (default
 * 25000,100000,400000). Per view and size, in the same run:
 *   - hand-written extraction of the same rows with plain property access (the ceiling);
 *   - plain `fhirpath` (R4 model) evaluation of the same paths, each compiled once (the baseline);
 *   - the engine alone (src/engine/sof: prepareView once, rowsOf per resource);
 *   - end to end: `POST /api/$viewdefinition-run` with `source` (a data source's records in a
 *     libSQL file database, WAL) to CSV, the body read to its end, in a fresh child process per
 *     run, whose peak RSS is reported (400k vs 100k shows whether memory is flat).
 * The in-memory cases cycle through a pool of at most 25,000 distinct resources (400k resources
 * held at once would measure the heap, not the engine); the end-to-end case reads N distinct records.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fhirpath from 'fhirpath'
import r4 from 'fhirpath/fhir-context/r4'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { createApp } from '../src/app.ts'
import { parseConfig } from '../src/config.ts'
import { buildDeps } from '../src/deps.ts'
import { prepareView, rowsOf } from '../src/engine/sof/index.ts'
import { createLogger } from '../src/lib/logger.ts'
import { signToken } from '../src/lib/tokens.ts'
import { insertRowStatements } from '../src/rowstore/record-sql.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'
import { type SofPatient, sofPatient } from './lib/sof-patients.ts'

const SIZES = (process.env.BENCH_SOF_SIZES ?? '25000,100000,400000').split(',').map(Number)
const POOL = 25_000
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

const CONTACTS_VIEW = {
  resourceType: 'ViewDefinition',
  name: 'patient_contacts',
  status: 'active',
  resource: 'Patient',
  select: [
    { column: [{ name: 'id', path: 'id' }] },
    {
      unionAll: [
        {
          forEach: 'telecom',
          column: [
            { name: 'kind', path: 'system' },
            { name: 'value', path: 'value' },
          ],
        },
        {
          forEach: 'address',
          column: [
            { name: 'kind', path: 'use' },
            { name: 'value', path: 'city' },
          ],
        },
      ],
    },
  ],
}

type Extract = (p: SofPatient) => number

/** Rows by plain property access: what the views mean, with nothing in between. */
const handWritten: Record<string, Extract> = {
  names: (p) => {
    const rows: unknown[][] = []
    for (const name of p.name ?? []) for (const given of name.given ?? []) rows.push([p.id, name.family ?? null, given])
    return rows.length
  },
  contacts: (p) => {
    const rows: unknown[][] = []
    for (const t of p.telecom ?? []) rows.push([p.id, t.system ?? null, t.value ?? null])
    for (const a of p.address ?? []) rows.push([p.id, a.use ?? null, a.city ?? null])
    return rows.length
  },
}

/** The same paths through the `fhirpath` package (R4 model), each compiled once. */
function plainFhirpath(): Record<string, Extract> {
  const c = (expression: string, base?: string) =>
    fhirpath.compile((base ? { base, expression } : expression) as never, r4) as (r: unknown) => any[]
  const id = c('id')
  const name = c('name')
  const family = c('family', 'HumanName')
  const given = c('given', 'HumanName')
  const telecom = c('telecom')
  const address = c('address')
  const system = c('system', 'ContactPoint')
  const value = c('value', 'ContactPoint')
  const use = c('use', 'Address')
  const city = c('city', 'Address')
  return {
    names: (p) => {
      const rows: unknown[][] = []
      const key = id(p)[0] ?? null
      for (const n of name(p)) {
        const f = family(n)[0] ?? null
        for (const g of given(n)) rows.push([key, f, g])
      }
      return rows.length
    },
    contacts: (p) => {
      const rows: unknown[][] = []
      const key = id(p)[0] ?? null
      for (const t of telecom(p)) rows.push([key, system(t)[0] ?? null, value(t)[0] ?? null])
      for (const a of address(p)) rows.push([key, use(a)[0] ?? null, city(a)[0] ?? null])
      return rows.length
    },
  }
}

function measure(size: number, pool: SofPatient[], extract: Extract) {
  const t0 = performance.now()
  let rows = 0
  for (let i = 0; i < size; i++) rows += extract(pool[i % pool.length])
  const seconds = (performance.now() - t0) / 1000
  return { rows, seconds, rate: size / seconds }
}

async function main() {
  if (process.argv[2] === '--e2e') return endToEndCase(process.argv[3], Number(process.argv[4]), process.argv[5])
  const pool = Array.from({ length: Math.min(POOL, Math.max(...SIZES)) }, (_, i) => sofPatient(i))
  const engine = {
    names: await prepareView(NAMES_VIEW),
    contacts: await prepareView(CONTACTS_VIEW),
  }
  const fp = plainFhirpath()
  const lines: string[] = []
  const e2eRss: Record<string, Record<number, number>> = { names: {}, contacts: {} }
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-sof-'))
  try {
    for (const size of SIZES) {
      const { file, sourceId, expected } = await seed(dir, size)
      for (const view of ['names', 'contacts'] as const) {
        const plan = engine[view]
        // Warm-up: every case once over the pool, so none is measured cold.
        for (const extract of [handWritten[view], fp[view], (p: SofPatient) => rowsOf(plan, p).length])
          measure(2000, pool, extract)
        const hand = measure(size, pool, handWritten[view])
        const plain = measure(size, pool, fp[view])
        const alone = measure(size, pool, (p) => rowsOf(plan, p).length)
        if (hand.rows !== plain.rows || hand.rows !== alone.rows)
          throw new Error(`row counts differ: ${hand.rows} ${plain.rows} ${alone.rows}`)
        const e2e = JSON.parse(
          execFileSync(
            process.execPath,
            ['--import', 'tsx', new URL(import.meta.url).pathname, '--e2e', file, String(sourceId), view],
            {
              encoding: 'utf8',
              maxBuffer: 1 << 20,
            },
          ),
        )
        if (e2e.rows !== expected[view]) throw new Error(`end to end gave ${e2e.rows} rows, not ${expected[view]}`)
        e2eRss[view][size] = e2e.peakRssMiB
        const k = (r: number) => `${Math.round(r / 1000).toLocaleString('en')}k`
        lines.push(
          `| ${view} | ${size.toLocaleString('en')} | ${expected[view].toLocaleString('en')} | ${k(hand.rate)} | ${k(plain.rate)} | ${k(alone.rate)} (${(alone.rate / plain.rate).toFixed(1)}× fhirpath, ${(alone.rate / hand.rate).toFixed(2)}× hand) | ${k(size / e2e.seconds)} | ${e2e.peakRssMiB.toFixed(0)} |`,
        )
        console.log(lines.at(-1))
      }
      if (!process.env.BENCH_KEEP_DIR) rmSync(file, { force: true })
    }
  } finally {
    if (process.env.BENCH_KEEP_DIR) console.log(`kept ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  }
  console.log('\nresources/s (k = thousand); ratios against plain fhirpath and hand-written extraction of the same run')
  console.log(
    '| view | Patients | rows | hand-written | plain fhirpath | engine alone | $viewdefinition-run → CSV | peak RSS MiB (e2e) |',
  )
  console.log('|---|---|---|---|---|---|---|---|')
  for (const line of lines) console.log(line)
  for (const view of ['names', 'contacts']) {
    const rss = e2eRss[view]
    if (rss[400000] && rss[100000]) console.log(`${view}: peak RSS at 400k / at 100k = ${(rss[400000] / rss[100000]).toFixed(3)}`)
  }
}

/** A libSQL file database with one data source holding `size` distinct Patients as its records. */
async function seed(dir: string, size: number) {
  const file = join(dir, `sof-${size}.db`)
  const { deps, call, client } = await appOn(file)
  const panel = await call('POST', '/api/panels', { name: 'SoF bench', tenantId: 'bench', userId: 'bench' })
  // A FHIR source whose server is unreachable: created with a failed first sync and no records;
  // the bench writes the records itself, the way a sync stores them.
  const source = await call('POST', `/api/panels/${panel.id}/datasources`, {
    type: 'fhir',
    config: { baseUrl: 'http://127.0.0.1:9/fhir', resourceTypes: ['Patient'] },
  })
  const now = '2026-11-01T10:00:00.000Z'
  const target = { tenantId: 'bench', panelId: panel.id, dataSourceId: source.id, generation: 0 }
  const expected = { names: 0, contacts: 0 }
  for (let start = 0; start < size; start += 20_000) {
    const rows = []
    for (let i = start; i < Math.min(size, start + 20_000); i++) {
      const resource = sofPatient(i)
      expected.names += handWritten.names(resource)
      expected.contacts += handWritten.contacts(resource)
      rows.push({ key: `Patient/pat-${i}`, data: JSON.stringify(resource), cells: '{}', errors: 'null' })
    }
    await deps.db.batch(insertRowStatements(target, rows, 0, now, 'replace').map((s) => deps.db.run(s)) as never)
  }
  // Checkpointed and closed, as after a sync in a deployment: the run's process then reads the
  // database file, not a writer's pending WAL (which made its peak RSS grow with the seed's size).
  await client.execute('PRAGMA wal_checkpoint(TRUNCATE)')
  client.close()
  return { file, sourceId: source.id as number, expected }
}

async function appOn(file: string) {
  const config = parseConfig({
    DATABASE_URL: `file:${file}`,
    JWT_SECRET: SECRET,
    ENCRYPTION_KEY: 'bench-encryption-key',
    LOG_LEVEL: 'error',
    SYNC_SCHEDULER: 'false',
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
  })
  const { db, client } = await openDatabase(config)
  const deps = await buildDeps(config, { db, storage: createStorage({ driver: memoryDriver() }), log: createLogger('error') })
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

/**
 * This process's peak RSS: VmHWM of its own memory map on Linux. Not getrusage's maxRSS, which
 * Linux carries across exec from the forked copy of the parent, so a child of a large parent
 * (the one that generated 400k Patients) would report the parent's size.
 */
function peakRssMiB(): number {
  try {
    const hwm = readFileSync('/proc/self/status', 'utf8').match(/VmHWM:\s+(\d+) kB/)
    if (hwm) return Number(hwm[1]) / 1024
  } catch {}
  return process.resourceUsage().maxRSS / 1024
}

/** The child process: one run to CSV, its body read to the end; prints seconds, rows and peak RSS. */
async function endToEndCase(file: string, sourceId: number, view: string) {
  const { request } = await appOn(file)
  if (process.env.BENCH_SOF_TRACE) console.error(`opened: rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`)
  const definition = view === 'names' ? NAMES_VIEW : CONTACTS_VIEW
  const t0 = performance.now()
  const res = await request('POST', '/api/$viewdefinition-run', {
    resourceType: 'Parameters',
    parameter: [
      { name: 'viewResource', resource: definition },
      { name: 'source', valueString: String(sourceId) },
      { name: '_format', valueCode: 'csv' },
    ],
  })
  if (res.status !== 200) throw new Error(`run → ${res.status}: ${await res.text()}`)
  let lines = 0
  let traced = 0
  const reader = res.body!.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++
    if (process.env.BENCH_SOF_TRACE && lines - traced >= Number(process.env.BENCH_SOF_TRACE)) {
      traced = lines
      const m = process.memoryUsage()
      console.error(`${lines} rows: rss ${(m.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(m.heapUsed / 2 ** 20).toFixed(0)} MiB`)
    }
  }
  const seconds = (performance.now() - t0) / 1000
  process.stdout.write(JSON.stringify({ seconds, rows: lines - 1, peakRssMiB: peakRssMiB() }))
  process.exit(0)
}

await main()
