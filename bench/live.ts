/**
 * `npm run bench:live` (LIVE.md "Cost"): the change feed's costs. Part one, the readers: 1,000
 * concurrent server-sent event streams on one Node process (bench/live-streams.ts).
 */

import { killAllNow } from './lib/processes.ts'
import { benchLiveStreams, liveStreamsTable } from './live-streams.ts'

async function main() {
  process.once('exit', killAllNow)
  console.log('\nServer-sent events: 1,000 concurrent streams on one Node process\n')
  const streams = await benchLiveStreams()
  console.log(liveStreamsTable(streams))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
