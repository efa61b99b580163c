/**
 * `npm run bench:views:rss`: only the service-process case of bench:views (bench/views-rss-case.ts),
 * for a quick look at the service's own peak RSS (issue 22 item 4, "peak RSS at 1M < 300 MB"): this
 * process writes BENCH_ROWS (100000) synthetic Patients to an NDJSON file in a temporary folder,
 * then runs the bundled case once over it, in a process of its own, and prints its memory and
 * time per phase and the goal's verdict. BENCH_KEEP_DIR=1 keeps the folder.
 */
import { join } from 'node:path'
import { writePatientsFile } from './lib/patients-file.ts'
import { mib } from './lib/rss.ts'
import { inTempDir } from './lib/temp-dir.ts'
import { bundleViewsRssCase, mb, peakPhase, RSS_GOAL_BYTES, runViewsRssCase, serviceRssTable } from './lib/views-rss.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000)

async function run(dir: string) {
  const bundle = await bundleViewsRssCase()
  const g0 = performance.now()
  await writePatientsFile(join(dir, 'patients.ndjson'), ROWS)
  console.log(`${ROWS.toLocaleString('en')} Patients written in ${((performance.now() - g0) / 1000).toFixed(1)} s`)
  const result = await runViewsRssCase(bundle, dir, ROWS)
  console.log(`\nService process (its own, from a bundle), ${ROWS.toLocaleString('en')} rows: memory per phase\n`)
  console.log(serviceRssTable(result))
  const ok = result.maxRss < RSS_GOAL_BYTES
  console.log(
    `\nservice process peak RSS: ${mib(result.maxRss)} (${mb(result.maxRss)}), set in "${peakPhase(result).name}"; ` +
      `goal < 300 MB${ROWS < 1_000_000 ? ' (set at 1M rows)' : ''}: ${ok ? 'pass' : 'FAIL'}`,
  )
}

inTempDir('panels-bench-views-rss-', run).catch((err) => {
  console.error(err)
  process.exit(1)
})
