/**
 * `npm run bench:live` (LIVE.md "Cost"): the change feed's costs. Part one, the readers: 1,000
 * concurrent server-sent event streams on one Node process (bench/live-streams.ts). Part two, the
 * write path beside the build before it, in the same run (bench/live-sync.ts).
 */

import { killAllNow } from './lib/processes.ts'
import { benchLiveStreams, liveStreamsTable } from './live-streams.ts'
import { runSyncBench } from './live-sync.ts'

async function main() {
  process.once('exit', killAllNow)
  console.log('\nServer-sent events: 1,000 concurrent streams on one Node process\n')
  const streams = await benchLiveStreams()
  console.log(liveStreamsTable(streams))
  console.log('\nThe write path: syncs with and without view moves, beside the build before the row store\n')
  console.log((await runSyncBench()).join('\n'))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
