/**
 * `npm run bench:sync` (data-engine issue, item 6): one run measures, each case in its own process
 * (bench/sync-case.ts) on a fresh libSQL file database in WAL mode:
 *   - the bare baseline: a multi-row INSERT of the 100,000 CSV rows into the same kind of database;
 *   - a 100,000-row, 10-column CSV file source synchronised through the service;
 *   - a 1,000,000-row CSV (peak RSS must stay under 200 MB);
 *   - 10,000 FHIR Patient resources served in Bundles of 100 by a loopback server in this process;
 *   - working the list (WORKLIST.md §6): a full resync of the 100,000 rows into a panel where 10,000
 *     rows carry work state, against the same resync of a panel without work, alternating in one
 *     process; every worked row must keep its work. Goal: ≤ 1.10× the time without work.
 * Prints rows/s, peak RSS, and the ratio of each sync to the bare insert of the same run.
 * BENCH_ROWS (100000), BENCH_BIG_ROWS (1000000), BENCH_FHIR (10000) and BENCH_RESYNC_ROUNDS (7) tune the sizes.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bundleCase, runCaseProcess } from './lib/case-process.ts'
import { startFhirPatientServer } from './lib/fhir-patients.ts'
import { writePatientCsv } from './lib/patient-csv.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)
const BIG_ROWS = Number(process.env.BENCH_BIG_ROWS ?? 1_000_000)
const FHIR = Number(process.env.BENCH_FHIR ?? 10_000)

interface CaseResult {
  rows: number
  seconds: number
  peakRssMiB: number
}

/** The resync case: `seconds` is the median resync with work state, `plainSeconds` without. */
interface ResyncResult extends CaseResult {
  worked: number
  lost: number
  plainSeconds: number
  work: number[]
  plain: number[]
}

async function main() {
  const bundle = await bundleCase('sync-case')
  const dir = mkdtempSync(join(tmpdir(), 'panels-bench-sync-'))
  const server = await startFhirPatientServer(FHIR)
  try {
    await writePatientCsv(join(dir, 'rows.csv'), ROWS)
    await writePatientCsv(join(dir, 'big.csv'), BIG_ROWS)
    const bare = await runCase(bundle, 'bare', dir, 'rows.csv')
    const bareSeq = await runCase(bundle, 'bare-seq', dir, 'rows.csv')
    const csv = await runCase(bundle, 'csv', dir, 'rows.csv')
    const csvCols = await runCase(bundle, 'csv-cols', dir, 'rows.csv')
    const big = await runCase(bundle, 'csv', dir, 'big.csv')
    const fhir = await runCase(bundle, 'fhir', dir, server.url)
    const resync = (await runCase(bundle, 'resync-work', dir, 'rows.csv')) as ResyncResult
    const rate = (r: CaseResult) => r.rows / r.seconds
    const line = (name: string, r: CaseResult, extra: string) =>
      `| ${name} | ${r.rows.toLocaleString('en')} | ${r.seconds.toFixed(2)} | ${Math.round(rate(r)).toLocaleString('en')} | ${r.peakRssMiB.toFixed(0)} | ${extra} |`
    console.log('\n| case | rows | seconds | rows/s | peak RSS MiB | ratio / target |')
    console.log('|---|---|---|---|---|---|')
    console.log(line('bare multi-row INSERT, same keys (baseline)', bare, '1'))
    console.log(
      line('bare multi-row INSERT, sequential keys', bareSeq, `${(rate(bareSeq) / rate(bare)).toFixed(2)}× the baseline`),
    )
    console.log(line('CSV file source, 10 columns', csv, verdict(rate(csv) / rate(bare), 0.4, 'of bare, target ≥ 0.40')))
    console.log(
      line(
        'CSV file source, 10 base columns materialised',
        csvCols,
        verdict(rate(csvCols) / rate(bare), 0.3, 'of bare, target ≥ 0.30'),
      ),
    )
    console.log(line('CSV file source, big', big, big.peakRssMiB < 200 ? 'peak RSS < 200 MB: pass' : 'peak RSS ≥ 200 MB: FAIL'))
    console.log(
      line('FHIR Patients, pages of 100', fhir, rate(fhir) >= 10_000 ? 'target ≥ 10,000/s: pass' : 'target ≥ 10,000/s: FAIL'),
    )
    const plain = { ...resync, seconds: resync.plainSeconds }
    const slower = resync.seconds / resync.plainSeconds
    console.log(line('full resync, 10 base columns, keyed by id, no work state (median)', plain, '1'))
    console.log(
      line(
        `full resync, the same with ${resync.worked.toLocaleString('en')} rows worked (median)`,
        resync,
        `${slower.toFixed(3)}× without, target ≤ 1.10× and none lost: ${slower <= 1.1 && resync.lost === 0 ? 'pass' : 'FAIL'} (work states lost: ${resync.lost})`,
      ),
    )
    const list = (t: number[]) => t.map((s) => s.toFixed(2)).join(', ')
    console.log(
      `\nresyncs with work state: ${list(resync.work)} s; without: ${list(resync.plain)} s (rounds alternate which goes first)`,
    )
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const verdict = (ratio: number, target: number, label: string) =>
  `${ratio.toFixed(3)} ${label}: ${ratio >= target ? 'pass' : 'FAIL'}`

/** A CSV of `rows` synthetic patients with 10 columns. */
const runCase = (bundle: string, kind: string, dir: string, target: string) =>
  runCaseProcess<CaseResult>(bundle, [kind, dir, target], { name: kind })

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
