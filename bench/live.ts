/**
 * `npm run bench:live` (live-feed issue; docs/live.md "Cost"): the write path's cost beside the
 * build before it (bench/live-sync.ts), in one run.
 */
import { runSyncBench } from './live-sync.ts'

async function main() {
  console.log((await runSyncBench()).join('\n'))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
