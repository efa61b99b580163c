/**
 * The service's phases of `npm run bench:views` in a process of their own, so the peak RSS is the
 * service's alone (issue 22 item 4: "peak RSS at 1M < 300 MB"): no bench harness, bare table, row
 * generator or TypeScript loader here. Run from a bundle (bench/lib/views-rss.ts builds and starts
 * it) as `node views-rss-case.mjs <dir> <rows>`: a libSQL file database `service.db` in <dir>, and
 * <dir>/patients.ndjson, <rows> Patients the parent wrote (bench/lib/patients-file.ts).
 *
 * Through the app (`app.request`, a real token), as bench:views does: the panel with its 10 columns
 * (3 calculated), the initial sync of the file, the filtered and sorted view and the grouped one,
 * pages of the first, the grouped view with its summary computed (cache emptied before each call),
 * the two "Everyone" views (unsorted, sorted), a CSV export of every row of the sorted one consumed
 * as a stream (lines counted, the body never held), a small write (a webhook delivery updating 3
 * rows) and the page after it, and the recompute of `Senior` after its formula changes (until the
 * panel's materialised version reaches its columns version).
 *
 * Memory is sampled every 100 ms (bench/lib/rss.ts) and the process's high-water mark read after
 * each phase. Prints one JSON line (`ViewsRssResult`, bytes and seconds) and exits.
 * BENCH_RSS_LIVE_HEAP=1 (a diagnosis; the parent then starts this with `--expose-gc`) also collects
 * garbage at the end of every phase and reports the live heap left (bench/lib/rss.ts `liveHeap`).
 * BENCH_PROFILE_RECOMPUTE=FILE writes a CPU profile of the recompute phase alone to FILE.
 * (SQLite's temporary B-trees and sorters spill to files past the page cache: the service sets
 * `temp_store = FILE` on its local connections, src/runtime/node-primitives.ts.)
 */
import { tuneHeap } from '../src/runtime/node-heap.ts'
import { profiled } from './lib/cpu-profile.ts'
import { inProcessService } from './lib/in-process-service.ts'
import { turn } from './lib/interleaved.ts'
import { rssTracker } from './lib/rss.ts'
import {
  countLines,
  createViewsPanel,
  everyoneView,
  filteredView,
  groupedView,
  patientsSource,
  untilMaterialised,
  WEBHOOK_ENDPOINT,
  webhookDelivery,
  webhookSource,
} from './lib/views-panel.ts'
import type { ViewsRssResult } from './lib/views-rss.ts'

const [dir, rowsArg] = process.argv.slice(2)
const ROWS = Number(rowsArg)
/** Page reads of the filtered view (pages 1–5 in turn), and computed summaries of the grouped view. */
const PAGE_READS = 20
const SUMMARY_READS = 5

async function main() {
  if (!dir || !(ROWS > 0)) throw new Error('usage: views-rss-case.mjs <dir> <rows>')
  // The heap as the service's Node entry sets it (src/runtime/node.ts).
  tuneHeap()
  const rss = rssTracker(100, { liveHeap: process.env.BENCH_RSS_LIVE_HEAP === '1' })
  rss.phase('service start (database opened and migrated, deps, app)')
  const { db, storage, deps, app, call, json } = await inProcessService(dir, 'service.db')

  rss.phase('panel and its 10 columns created')
  const { panel, calc } = await createViewsPanel(json)

  rss.phase('initial sync, cells materialised')
  const source = await json('POST', `/api/panels/${panel.id}/datasources`, patientsSource('patients.ndjson'))
  if (source.syncStatus !== 'success') throw new Error(`sync failed: ${source.errorMessage}`)

  rss.phase('view created: 2 filters, 2 sort keys')
  const view = await json('POST', '/api/views', filteredView(panel.id))
  rss.phase('view created: grouped by City, 3 aggregations')
  const grouped = await json('POST', '/api/views', groupedView(panel.id))

  const page = async (i: number) => {
    const body = await json('GET', `/api/views/${view.id}/rows?limit=50&page=${1 + (i % 5)}`)
    if (body.data.length !== 50) throw new Error(`a page answered ${body.data.length} rows`)
  }
  rss.phase(`view pages (${PAGE_READS} reads of pages 1–5)`)
  for (let i = 0; i < PAGE_READS; i++) {
    await page(i)
    await turn()
  }

  rss.phase(`grouped view, summary computed (${SUMMARY_READS} reads, the cache emptied before each)`)
  for (let i = 0; i < SUMMARY_READS; i++) {
    await storage.clear()
    const body = await json('GET', `/api/views/${grouped.id}/rows?limit=50`)
    if (!body.groups?.length) throw new Error('no groups answered')
    await turn()
  }

  rss.phase('view created: everyone, unsorted')
  await json('POST', '/api/views', everyoneView(panel.id, false))
  rss.phase('view created: everyone, 2 sort keys')
  const sorted = await json('POST', '/api/views', everyoneView(panel.id, true))

  rss.phase("CSV export of every row in the sorted view's order, streamed")
  const exportedRows = (await countLines(await call('GET', `/api/views/${sorted.id}/export?format=csv`))) - 1
  if (exportedRows !== ROWS) throw new Error(`an export of ${exportedRows} rows, not ${ROWS}`)

  rss.phase('small write (a webhook source, a delivery updating 3 rows), then a page')
  await json('POST', `/api/panels/${panel.id}/datasources`, webhookSource)
  const res = await app.request(`/api/webhooks/${WEBHOOK_ENDPOINT}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: webhookDelivery(0),
  })
  if (res.status !== 200) throw new Error(`a webhook delivery answered ${res.status}: ${await res.text()}`)
  await page(0)

  rss.phase('recompute of one calculated column (Senior), until materialised')
  await profiled(process.env.BENCH_PROFILE_RECOMPUTE, async () => {
    await json('PUT', `/api/columns/${calc.Senior.id}`, { formula: '{Age} >= 70' })
    await untilMaterialised(db, panel.id)
  })

  const { phases, maxRss } = rss.stop()
  const result: ViewsRssResult = { rows: ROWS, exportedRows, maxRss, phases }
  console.log(JSON.stringify(result))
  await deps.close()
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
