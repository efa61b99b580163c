/**
 * `npm run bench:views` (live-panels issue, item 10): a 100,000-row panel built from synthetic FHIR
 * Patient records (an NDJSON file source) with 10 columns, 3 of them calculated, on a libSQL file
 * database in WAL mode, measured in-process through the app (`app.request`, real tokens):
 *   - the initial sync with every cell materialised (rows/s);
 *   - a view page: 2 filters, 2 sort keys, 50 rows (p50/p95 over pages 1–5, and the first request,
 *     before the view's summary is cached);
 *   - a grouped view with 3 aggregations (p50/p95, and the first request);
 *   - a CSV export of every row (rows/s);
 *   - the cost of exporting in a view's order (issue 20 item 7): a CSV export of every row sorted
 *     by two keys (Family asc, Birth Date desc: keyset steps over the sort) against the same rows
 *     in record-id order (no sort), alternating call by call in the same run. Goal: ≤ 10 % slower at p50;
 *   - the recompute of one calculated column after its formula changes (rows/s), beside the formula
 *     engine alone evaluating the same formula over the same rows' cells (issue 22 item 3);
 *   - the read audit's cost (issue 12 point 6): the view page and the CSV export with the audit on
 *     and off, interleaved in the same run (the audit is switched on the bench's own deps; there
 *     is no variable to turn it off in a deployment). Goal: ≤ 5 % slower at p50.
 *   - the cost of working the list (WORKLIST.md §6): a tenth of the rows get work state, then the
 *     view page (its 10 columns chosen) against the same page that also filters on `_status` and
 *     shows `_status`, `_assignee`, `_dueAt` and `_overdue`, alternating call by call. Goal: p50 ≤ 1.2×.
 * BENCH_ROWS (100000), BENCH_REPEAT (30) and BENCH_EXPORT_REPEAT (5) tune it; BENCH_KEEP_DIR=1 keeps the database for a look.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { createApp } from '../src/app.ts'
import type { Db } from '../src/db/client.ts'
import { buildDeps } from '../src/deps.ts'
import { compileFormula } from '../src/engine/formula/index.ts'
import { createLogger } from '../src/lib/logger.ts'
import { signToken } from '../src/lib/tokens.ts'
import { sha256Hex } from '../src/runtime/node-crypto.ts'
import { nodeFileStore } from '../src/runtime/node-files.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'
import { patient } from './lib/fhir-patients.ts'
import { BENCH_SECRET, benchConfig, inTempDir } from './lib/temp-dir.ts'
import { seedWorkState } from './lib/work-state.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)
const REPEAT = Number(process.env.BENCH_REPEAT ?? 30)
const EXPORT_REPEAT = Number(process.env.BENCH_EXPORT_REPEAT ?? 5)
const SECRET = BENCH_SECRET

const main = () => inTempDir('panels-bench-views-', run)

async function run(dir: string) {
  const config = benchConfig(dir, 'views.db')
  const { db } = await openDatabase(config)
  const deps = await buildDeps(config, {
    db,
    storage: createStorage({ driver: memoryDriver() }),
    files: nodeFileStore(dir),
    sha256Hex,
    log: createLogger('error'),
  })
  const app = createApp(() => deps)
  const token = await signToken(SECRET, { tenantId: 'bench', userId: 'bench' })
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    if (res.status >= 400) throw new Error(`${method} ${path} → ${res.status}: ${await res.text()}`)
    return res
  }
  const json = async (method: string, path: string, body?: unknown) => (await call(method, path, body)).json()

  writeFileSync(join(dir, 'patients.ndjson'), Array.from({ length: ROWS }, (_, i) => JSON.stringify(patient(i))).join('\n'))
  const panel = await json('POST', '/api/panels', { name: 'Bench panel', tenantId: 'bench', userId: 'bench' })
  const base: [string, string, string][] = [
    ['Family', 'Patient.name.family.first()', 'text'],
    ['Given', 'Patient.name.given.first()', 'text'],
    ['Gender', 'Patient.gender', 'text'],
    ['Birth Date', 'Patient.birthDate', 'date'],
    ['City', 'Patient.address.city.first()', 'text'],
    ['Postal Code', 'Patient.address.postalCode.first()', 'text'],
    ['Active', 'Patient.active', 'boolean'],
  ]
  for (const [name, fhirPath, type] of base) await json('POST', `/api/panels/${panel.id}/columns/base`, { name, fhirPath, type })
  const calculated: [string, string, string][] = [
    ['Age', 'AGE({Birth Date})', 'number'],
    ['Name', '{Given} & " " & {Family}', 'text'],
    ['Senior', '{Age} >= 65', 'boolean'],
  ]
  const calc: Record<string, { id: number }> = {}
  for (const [name, formula, type] of calculated) {
    calc[name] = await json('POST', `/api/panels/${panel.id}/columns/calculated`, { name, formula, type })
  }

  const t0 = performance.now()
  const source = await json('POST', `/api/panels/${panel.id}/datasources`, {
    type: 'json',
    config: { filePath: 'patients.ndjson', format: 'json' },
  })
  const syncSeconds = (performance.now() - t0) / 1000
  if (source.syncStatus !== 'success') throw new Error(`sync failed: ${source.errorMessage}`)

  const view = await json('POST', '/api/views', {
    name: 'Seniors by age',
    panelId: panel.id,
    config: { columns: [], groupBy: [], layout: 'table' },
    filters: [
      { columnTitle: 'Age', operator: 'greaterThanOrEqual', value: 40 },
      { columnTitle: 'Gender', operator: 'equals', value: 'female' },
    ],
    sorting: [
      { columnTitle: 'Family', direction: 'asc', priority: 1 },
      { columnTitle: 'Birth Date', direction: 'desc', priority: 2 },
    ],
  })
  const grouped = await json('POST', '/api/views', {
    name: 'By city',
    panelId: panel.id,
    config: { columns: [], groupBy: ['City'], layout: 'table' },
    aggregations: [
      { columnTitle: 'Age', function: 'average', alias: 'meanAge' },
      { columnTitle: 'Age', function: 'max' },
      { columnTitle: 'Family', function: 'distinct' },
    ],
  })

  const page = await latencies(REPEAT, async (i) => {
    const body = await json('GET', `/api/views/${view.id}/rows?limit=50&page=${1 + (i % 5)}`)
    if (body.data.length !== 50) throw new Error(`a page answered ${body.data.length} rows`)
  })
  const groups = await latencies(Math.max(5, Math.round(REPEAT / 2)), async () => {
    const body = await json('GET', `/api/views/${grouped.id}/rows?limit=50`)
    if (!body.groups?.length) throw new Error('no groups answered')
  })

  const unsorted = await json('POST', '/api/views', {
    name: 'Everyone',
    panelId: panel.id,
    config: { columns: [], groupBy: [], layout: 'table' },
  })
  const sorted = await json('POST', '/api/views', {
    name: 'Everyone by family',
    panelId: panel.id,
    config: { columns: [], groupBy: [], layout: 'table' },
    sorting: [
      { columnTitle: 'Family', direction: 'asc', priority: 1 },
      { columnTitle: 'Birth Date', direction: 'desc', priority: 2 },
    ],
  })
  let orderedRows = 0
  let sortedNow = false
  const orderCall = async () => {
    const text = await (await call('GET', `/api/views/${(sortedNow ? sorted : unsorted).id}/export?format=csv`)).text()
    orderedRows = text.split('\n').filter(Boolean).length - 1
    if (orderedRows !== ROWS) throw new Error(`an export of ${orderedRows} rows`)
  }
  // "on" is the sorted view, "off" the same rows in record-id order.
  const byOrder = await alternating(
    EXPORT_REPEAT,
    (on) => {
      sortedNow = on
    },
    orderCall,
  )

  const e0 = performance.now()
  const csv = await (await call('GET', `/api/views/${grouped.id}/export?format=csv`)).text()
  const exportSeconds = (performance.now() - e0) / 1000
  const exported = csv.split('\n').filter(Boolean).length - 1

  // The audit's cost: on and off alternate call by call, so drift of the machine hits both alike.
  const setAudit = (on: boolean) => {
    deps.config.audit.reads = on
  }
  const pageCall = async (i: number) => {
    const body = await json('GET', `/api/views/${view.id}/rows?limit=50&page=${1 + (i % 5)}`)
    if (body.data.length !== 50) throw new Error(`a page answered ${body.data.length} rows`)
  }
  const auditedPage = await alternating(REPEAT * 2, setAudit, pageCall)
  const exportCall = async () => {
    const text = await (await call('GET', `/api/views/${grouped.id}/export?format=csv`)).text()
    if (text.length === 0) throw new Error('an empty export')
  }
  const auditedExport = await alternating(EXPORT_REPEAT, setAudit, exportCall)
  setAudit(true)
  const [{ n: records }] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM access_records`)

  const r0 = performance.now()
  await json('PUT', `/api/columns/${calc.Senior.id}`, { formula: '{Age} >= 70' })
  for (;;) {
    const [panelRow] = await db.all<{ c: number; m: number }>(
      sql`SELECT columns_version AS c, materialised_version AS m FROM panels WHERE id = ${panel.id}`,
    )
    if (Number(panelRow.c) === Number(panelRow.m)) break
    await new Promise((r) => setTimeout(r, 20))
  }
  const recomputeSeconds = (performance.now() - r0) / 1000
  const engineRate = await formulaEngineRate(db, panel.id, '{Age} >= 70')

  // Working the list: a tenth of the rows worked, then the page of the first view with its
  // columns chosen, against the same page filtering on `_status` and showing four virtual columns.
  const worked = await seedWorkState(db, panel.id, Math.round(ROWS / 10))
  const shown = [...base, ...calculated].map(([name]) => name)
  const plainView = await json('POST', '/api/views', {
    name: 'Seniors by age, columns chosen',
    panelId: panel.id,
    config: { columns: shown, groupBy: [], layout: 'table' },
    filters: view.filters,
    sorting: view.sorting,
  })
  const workView = await json('POST', '/api/views', {
    name: 'Seniors by age, still to do',
    panelId: panel.id,
    config: { columns: [...shown, '_status', '_assignee', '_dueAt', '_overdue'], groupBy: [], layout: 'table' },
    filters: [...view.filters, { columnTitle: '_status', operator: 'in', value: ['open', 'in_progress'] }],
    sorting: view.sorting,
  })
  let workNow = false
  const workPage = async (i: number) => {
    const body = await json('GET', `/api/views/${(workNow ? workView : plainView).id}/rows?limit=50&page=${1 + (i % 5)}`)
    if (body.data.length !== 50) throw new Error(`a page answered ${body.data.length} rows`)
    if (workNow && !('_status' in body.data[0])) throw new Error('a page without its virtual columns')
  }
  // "on" is the page with the work columns, "off" the same page without them.
  const byWork = await alternating(
    REPEAT * 2,
    (on) => {
      workNow = on
    },
    workPage,
  )

  const rate = (n: number, s: number) => Math.round(n / s).toLocaleString('en')
  const verdict = (ok: boolean) => (ok ? 'pass' : 'FAIL')
  console.log(`\n${ROWS.toLocaleString('en')} FHIR Patient rows, 10 columns (3 calculated)\n`)
  console.log('| measure | result | target |')
  console.log('|---|---|---|')
  console.log(`| initial sync, cells materialised | ${syncSeconds.toFixed(2)} s, ${rate(ROWS, syncSeconds)} rows/s | |`)
  console.log(
    `| view page (2 filters, 2 sorts, 50 rows) | p50 ${page.p50.toFixed(1)} ms, p95 ${page.p95.toFixed(1)} ms (first ${page.first.toFixed(1)} ms) | p50 ≤ 50 ms: ${verdict(page.p50 <= 50)} |`,
  )
  console.log(
    `| grouped view, 3 aggregations | p50 ${groups.p50.toFixed(1)} ms, p95 ${groups.p95.toFixed(1)} ms (first ${groups.first.toFixed(1)} ms) | p50 ≤ 300 ms: ${verdict(groups.p50 <= 300)} |`,
  )
  console.log(
    `| CSV export of ${exported.toLocaleString('en')} rows | ${exportSeconds.toFixed(2)} s, ${rate(exported, exportSeconds)} rows/s | ≥ 50,000 rows/s: ${verdict(exported / exportSeconds >= 50_000)} |`,
  )
  console.log(
    `| recompute of one calculated column | ${recomputeSeconds.toFixed(2)} s, ${rate(ROWS, recomputeSeconds)} rows/s (the formula engine alone: ${rate(engineRate, 1)} rows/s) | ≥ 60,000 rows/s: ${verdict(ROWS / recomputeSeconds >= 60_000)} |`,
  )
  const slower = (m: { on: number; off: number }) => (m.on / m.off - 1) * 100
  const cost = (name: string, m: { on: number; off: number }, unit: string, digits: number) =>
    console.log(
      `| ${name} | audit on p50 ${m.on.toFixed(digits)} ${unit}, off p50 ${m.off.toFixed(digits)} ${unit}: ${slower(m) >= 0 ? '+' : ''}${slower(m).toFixed(1)} % | ≤ 5 % slower: ${verdict(slower(m) <= 5)} |`,
    )
  const orderCost = (byOrder.on / byOrder.off - 1) * 100
  console.log(
    `| CSV export of ${orderedRows.toLocaleString('en')} rows in the view's order (2 sort keys) vs record-id order | sorted p50 ${byOrder.on.toFixed(0)} ms (${rate(orderedRows, byOrder.on / 1000)} rows/s), id order p50 ${byOrder.off.toFixed(0)} ms (${rate(orderedRows, byOrder.off / 1000)} rows/s): ratio ${(byOrder.off / byOrder.on).toFixed(2)} | ≤ 10 % slower: ${verdict(orderCost <= 10)} |`,
  )
  cost('read audit: view page (50 rows)', auditedPage, 'ms', 2)
  cost(`read audit: CSV export of ${exported.toLocaleString('en')} rows`, auditedExport, 'ms', 0)
  const workRatio = byWork.on / byWork.off
  console.log(
    `| view page filtering on \`_status\` and showing 4 virtual columns (${worked.toLocaleString('en')} rows worked) vs the same page without them | with p50 ${byWork.on.toFixed(1)} ms, p95 ${byWork.onP95.toFixed(1)} ms; without p50 ${byWork.off.toFixed(1)} ms, p95 ${byWork.offP95.toFixed(1)} ms: ratio ${workRatio.toFixed(2)} | ≤ 1.2×: ${verdict(workRatio <= 1.2)} |`,
  )
  console.log(`\n(${Number(records).toLocaleString('en')} access records written by this run)`)
  await deps.close()
}

/**
 * Rows per second of the formula engine alone: `formula` compiled once and evaluated over every
 * row's cells by column name (read before the clock starts); the best of 5 passes.
 */
async function formulaEngineRate(db: Db, panelId: number, formula: string): Promise<number> {
  const names = await db.all<{ id: number; name: string }>(sql`SELECT id, name FROM columns WHERE panel_id = ${panelId}`)
  const rows = (await db.all<{ cells: string }>(sql`SELECT cells FROM records WHERE panel_id = ${panelId}`)).map((r) => {
    const cells = JSON.parse(r.cells) as Record<string, unknown>
    return Object.fromEntries(names.map((c) => [c.name, cells[c.id] ?? null]))
  })
  const compiled = compileFormula(formula)
  const now = new Date()
  const clock = { now: () => now }
  let best = Number.POSITIVE_INFINITY
  for (let pass = 0; pass < 5; pass++) {
    let yes = 0
    const t = performance.now()
    for (const cells of rows) if (compiled.evaluate({ cells }, clock).value === true) yes++
    best = Math.min(best, performance.now() - t)
    if (yes === 0 || yes === rows.length) throw new Error(`${formula} held for ${yes} of ${rows.length} rows`)
  }
  return rows.length / (best / 1000)
}

/**
 * p50 and p95 (ms) of `n` calls each with a setting on and off (the audit, a sort, the work
 * columns), alternating on/off, after one warm-up of each.
 */
async function alternating(n: number, set: (on: boolean) => void, once: (i: number) => Promise<void>) {
  const times = { on: [] as number[], off: [] as number[] }
  for (const on of [true, false]) {
    set(on)
    await once(0)
  }
  for (let i = 0; i < n * 2; i++) {
    const on = i % 2 === 0
    set(on)
    const t = performance.now()
    await once(i >> 1)
    times[on ? 'on' : 'off'].push(performance.now() - t)
  }
  const at = (list: number[], q: number) =>
    [...list].sort((a, b) => a - b)[Math.min(list.length - 1, Math.floor(q * list.length))]
  return { on: at(times.on, 0.5), off: at(times.off, 0.5), onP95: at(times.on, 0.95), offP95: at(times.off, 0.95) }
}

/** p50/p95 of `n` calls after a first one, whose own time (summary not cached yet) is `first`. */
async function latencies(n: number, once: (i: number) => Promise<void>) {
  const t0 = performance.now()
  await once(0)
  const first = performance.now() - t0
  const times: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await once(i)
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]
  return { first, p50: at(0.5), p95: at(0.95) }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
