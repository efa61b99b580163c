/**
 * `npm run bench:fhir:bulk` (issue 23, item 5): N Patients (BENCH_FHIR_BULK, 1,000,000) synchronised
 * by a `fhir` source two ways, each run in its own service process (bench/fhir-bulk-case.ts, from a
 * bundle like bench:sync) on a fresh libSQL file database, against loopback servers in this process
 * that generate the same resources (bench/lib/fhir-patients.ts):
 *   - bulk: a system `$export` (one 202 poll honouring Retry-After: 1, then the manifest), the output
 *     NDJSON in files of 100,000 generated as they stream;
 *   - search: `GET /Patient?_count=1000`, searchset Bundles followed by `link[next]`. 1000 is the
 *     largest page our source asks for and what servers commonly cap `_count` at (HAPI's default
 *     maximum page size is in the hundreds to a thousand).
 * Prints resources/s of each, the ratio bulk/search (goal ≥ 2×) and the service's peak RSS during
 * the bulk sync (goal < 250 MB). BENCH_ROUNDS (3) rounds alternate which case goes first and the
 * median of each is compared (the machine may be shared). BENCH_FHIR_BULK and BENCH_FHIR_PAGE tune
 * the sizes; BENCH_CPU_PROF=<folder> writes a CPU profile of each case there.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bundleCase, runCaseProcess } from './lib/case-process.ts'
import { startBulkPatientServer } from './lib/fhir-bulk-patients.ts'
import { startFhirPatientServer } from './lib/fhir-patients.ts'

const N = Number(process.env.BENCH_FHIR_BULK ?? 1_000_000)
const PAGE = Number(process.env.BENCH_FHIR_PAGE ?? 1000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** BENCH_ONLY=bulk|search runs one case (for profiling); the comparison needs both. */
const ONLY = process.env.BENCH_ONLY

interface CaseResult {
  rows: number
  seconds: number
  peakRssMiB: number
  /** Peak V8 heap used and memory outside it (buffers), sampled every 250 ms. */
  heapMiB: number
  externalMiB: number
}

/** The run of median time, with the highest peak RSS, heap and external memory of all the runs. */
function median(rs: CaseResult[]): CaseResult {
  const sorted = [...rs].sort((a, b) => a.seconds - b.seconds)
  return {
    ...sorted[Math.floor(sorted.length / 2)],
    peakRssMiB: Math.max(...rs.map((r) => r.peakRssMiB)),
    heapMiB: Math.max(...rs.map((r) => r.heapMiB)),
    externalMiB: Math.max(...rs.map((r) => r.externalMiB)),
  }
}

function runCase(bundle: string, kind: string, dir: string, baseUrl: string): Promise<CaseResult> {
  // BENCH_CPU_PROF=<folder>: each case writes a V8 CPU profile there (`node --cpu-prof`).
  const nodeArgs = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : []
  return runCaseProcess<CaseResult>(bundle, [kind, dir, baseUrl, String(PAGE)], { name: kind, nodeArgs })
}

async function main() {
  const bundle = await bundleCase('fhir-bulk-case')
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-fhir-bulk-'))
  const bulkServer = await startBulkPatientServer(N)
  const searchServer = await startFhirPatientServer(N)
  try {
    // Rounds alternate which case goes first, so a busy machine weighs on both alike; each case's
    // median run is reported, with the highest peak RSS of its rounds.
    const runs: Record<'bulk' | 'search', CaseResult[]> = { bulk: [], search: [] }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['bulk', 'search'] as const) : (['search', 'bulk'] as const)
      for (const kind of order.filter((k) => !ONLY || k === ONLY)) {
        const r = await runCase(bundle, kind, dir, kind === 'bulk' ? bulkServer.url : searchServer.url)
        if (r.rows !== N) throw new Error(`${kind} stored ${r.rows} records, not ${N}`)
        runs[kind].push(r)
        for (const suffix of ['', '-wal', '-shm']) rmSync(join(dir, `${kind}.db${suffix}`), { force: true })
      }
    }
    if (ONLY) {
      console.log(JSON.stringify(runs))
      return
    }
    const bulk = median(runs.bulk)
    const search = median(runs.search)
    if (ROUNDS > 1) {
      const list = (rs: CaseResult[]) => rs.map((r) => `${r.seconds.toFixed(1)} s (${r.peakRssMiB.toFixed(0)} MiB)`).join(', ')
      console.log(`\nbulk rounds: ${list(runs.bulk)}; search rounds: ${list(runs.search)}`)
    }
    const rate = (r: CaseResult) => r.rows / r.seconds
    const ratio = rate(bulk) / rate(search)
    const line = (name: string, r: CaseResult, extra: string) =>
      `| ${name} | ${r.rows.toLocaleString('en')} | ${r.seconds.toFixed(1)} | ${Math.round(rate(r)).toLocaleString('en')} | ${r.peakRssMiB.toFixed(0)} (${r.heapMiB.toFixed(0)}, ${r.externalMiB.toFixed(0)}) | ${extra} |`
    console.log('\n| case | resources | seconds | resources/s | peak RSS MiB (heap, external) | target |')
    console.log('|---|---|---|---|---|---|')
    console.log(
      line(
        'bulk $export, NDJSON files of 100,000',
        bulk,
        `${bulk.peakRssMiB < 250 ? 'peak RSS < 250 MB: pass' : 'peak RSS ≥ 250 MB: FAIL'}`,
      ),
    )
    console.log(line(`search, Bundles of ${PAGE}`, search, '-'))
    console.log(`\nbulk / search: ${ratio.toFixed(2)}× (goal ≥ 2×: ${ratio >= 2 ? 'pass' : 'FAIL'})`)
  } finally {
    await bulkServer.close()
    await searchServer.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
