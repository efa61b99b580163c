/**
 * One case of `npm run bench:fhir:bulk`, run in its own process (the service, with its own peak RSS):
 *   bulk <dir> <baseUrl>     a `fhir` source in bulk mode (system $export, since none) created and synced
 *   search <dir> <baseUrl>   a `fhir` source searching Patient in pages of <pageSize> (4th argument)
 * Each on a fresh libSQL file database in the folder. Prints one JSON line: { rows, seconds, peakRssMiB }.
 * The process tunes its heap at start as the service's Node entry does (src/runtime/node-heap.ts).
 */
import { join } from 'node:path'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { parseConfig } from '../src/config.ts'
import type { ServiceContext } from '../src/context.ts'
import { buildDeps } from '../src/deps.ts'
import { createLogger } from '../src/lib/logger.ts'
import { createDataSource } from '../src/modules/datasources/datasources.service.ts'
import { createPanel } from '../src/modules/panels/panels.service.ts'
import { sha256Hex } from '../src/runtime/node-crypto.ts'
import { tuneHeap } from '../src/runtime/node-heap.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'

const [kind, dir, baseUrl, pageSize] = process.argv.slice(2)

async function main() {
  tuneHeap()
  const config = parseConfig({
    DATABASE_URL: `file:${join(dir, `${kind}.db`)}`,
    JWT_SECRET: 'bench-secret-0123456789-0123456789-abcdef',
    ENCRYPTION_KEY: 'bench-encryption-key',
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
    LOG_LEVEL: 'warn',
    SYNC_TIMEOUT_SECONDS: '3600',
  })
  const { db, client } = await openDatabase(config)
  const deps = await buildDeps(config, {
    db,
    storage: createStorage({ driver: memoryDriver() }),
    sha256Hex,
    log: createLogger('warn'),
  })
  const ctx: ServiceContext = {
    ...deps,
    scope: { tenantId: 'bench', userId: 'bench', isAdmin: false, groups: [] },
    meta: { requestId: 'bench', source: 'system' },
  }
  const panel = await createPanel(ctx, { name: 'Bench', tenantId: 'bench', userId: 'bench' } as never)
  const sourceConfig =
    kind === 'bulk'
      ? { baseUrl, mode: 'bulk', bulk: { level: 'system', types: ['Patient'], since: 'none' }, timeout: 300_000 }
      : { baseUrl, resourceType: 'Patient', pageSize: Number(pageSize), maxPages: 1_000_000, timeout: 300_000 }
  // Where the memory goes: the V8 heap and buffers outside it, sampled while the sync runs.
  const peak = { heapMiB: 0, externalMiB: 0 }
  // BENCH_MEM_TRACE=1: a line per second on stderr (seconds, RSS, heap, records stored), to see
  // which phase of the sync holds the peak.
  let tick = 0
  const sampler = setInterval(() => {
    const m = process.memoryUsage()
    if (process.env.BENCH_MEM_TRACE && ++tick % 4 === 0) {
      const mib = (n: number) => Math.round(n / 2 ** 20)
      console.error(`${kind} ${((performance.now() - t0) / 1000).toFixed(0)}s rss ${mib(m.rss)} heap ${mib(m.heapUsed)}`)
    }
    peak.heapMiB = Math.max(peak.heapMiB, m.heapUsed / 2 ** 20)
    peak.externalMiB = Math.max(peak.externalMiB, m.external / 2 ** 20)
  }, 250)
  const t0 = performance.now()
  const source = await createDataSource(ctx, panel.id, { type: 'fhir', config: sourceConfig } as never)
  const seconds = (performance.now() - t0) / 1000
  clearInterval(sampler)
  if (source.syncStatus !== 'success') throw new Error(`sync ended in ${source.syncStatus}: ${source.errorMessage}`)
  const [{ n }] = (await client.execute('SELECT count(*) AS n FROM records')).rows as unknown as { n: number }[]
  const peakRssMiB = process.resourceUsage().maxRSS / 1024
  client.close()
  console.log(JSON.stringify({ rows: Number(n), seconds, peakRssMiB, ...peak }))
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
