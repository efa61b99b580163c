/**
 * One case of `npm run bench:sync`, run in its own process so its peak RSS is its own:
 *   bare <dir> <csv>          multi-row INSERT (500 rows per statement) of the CSV's rows, parsed and keyed first
 *   bare-seq <dir> <csv>      the same with sequential keys
 *   csv <dir> <csv>           a csv data source synchronised through the service (create → initial sync)
 *   csv-cols <dir> <csv>      the same into a panel with 10 base columns, every cell materialised
 *   fhir <dir> <baseUrl>      a fhir data source reading Patient pages from a loopback server
 *   resync-work <dir> <csv>   full resyncs of two panels of the same rows (10 base columns, keyed by
 *                             `id`), one with a tenth of its rows worked, alternating (see resyncWork)
 * Prints one JSON line: { rows, seconds, peakRssMiB } (resync-work adds its own figures).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { parseConfig } from '../src/config.ts'
import type { ServiceContext } from '../src/context.ts'
import { buildDeps } from '../src/deps.ts'
import { createLogger } from '../src/lib/logger.ts'
import { createBaseColumn } from '../src/modules/columns/columns.service.ts'
import { createDataSource, syncDataSource } from '../src/modules/datasources/datasources.service.ts'
import { createPanel } from '../src/modules/panels/panels.service.ts'
import { sha256Hex } from '../src/runtime/node-crypto.ts'
import { nodeFileStore } from '../src/runtime/node-files.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'
import { seedWorkState, workedRows } from './lib/work-state.ts'

const [kind, dir, target] = process.argv.slice(2)

/** The service's configuration on the libSQL file `database` in the case's folder. */
const benchConfig = (database: string) =>
  parseConfig({
    DATABASE_URL: `file:${join(dir, database)}`,
    FILES_DIR: dir,
    JWT_SECRET: 'bench-secret-0123456789-0123456789-abcdef',
    ENCRYPTION_KEY: 'bench-encryption-key',
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
    LOG_LEVEL: 'warn',
  })

async function main() {
  if (kind === 'resync-work') return resyncWork()
  const config = benchConfig(`${kind}-${target.replace(/\W/g, '_')}.db`)
  const { db, client } = await openDatabase(config)
  const started = performance.now()
  let rows = 0
  if (kind === 'bare' || kind === 'bare-seq') {
    rows = await bareInsert(client, readFileSync(join(dir, target), 'utf8'), kind === 'bare-seq')
  } else {
    const deps = await buildDeps(config, {
      db,
      storage: createStorage({ driver: memoryDriver() }),
      files: nodeFileStore(dir),
      sha256Hex,
      log: createLogger('warn'),
    })
    const ctx: ServiceContext = {
      ...deps,
      scope: { tenantId: 'bench', userId: 'bench', isAdmin: false, groups: [] },
      meta: { requestId: 'bench', source: 'system' },
    }
    const panel = await createPanel(ctx, { name: 'Bench', tenantId: 'bench', userId: 'bench' } as never)
    if (kind === 'csv-cols') await createCsvColumns(ctx, panel.id)
    const t0 = performance.now()
    const source =
      kind === 'csv' || kind === 'csv-cols'
        ? await createDataSource(ctx, panel.id, { type: 'csv', config: { filePath: target, format: 'csv' } } as never)
        : await createDataSource(ctx, panel.id, {
            type: 'fhir',
            config: { baseUrl: target, resourceType: 'Patient', pageSize: 100, maxPages: 1000 },
          } as never)
    const elapsed = (performance.now() - t0) / 1000
    if (source.syncStatus !== 'success') throw new Error(`sync ended in ${source.syncStatus}: ${source.errorMessage}`)
    const [{ n }] = (await client.execute('SELECT count(*) AS n FROM records')).rows as unknown as { n: number }[]
    rows = Number(n)
    report(rows, elapsed)
    return
  }
  report(rows, (performance.now() - started) / 1000)
}

/** The panel's 10 base columns, one per CSV field, created before the data arrives. */
async function createCsvColumns(ctx: ServiceContext, panelId: number) {
  const types: Record<string, string> = { birthDate: 'date', lastVisit: 'date', hba1c: 'number', postalCode: 'text' }
  for (const field of ['id', 'family', 'given', 'gender', 'birthDate', 'city', 'postalCode', 'mrn', 'hba1c', 'lastVisit']) {
    await createBaseColumn(ctx, panelId, {
      name: field,
      sourceField: field,
      type: types[field] ?? 'text',
      properties: {},
      metadata: {},
    } as never)
  }
}

/**
 * Working the list (WORKLIST.md §6): the same CSV rows synchronised into two panels (10 base
 * columns, keyed by `id`, as a worked list should be), each alone in a database of its own, so
 * neither panel's rows sit in the other's indexes (in one file, the first source's new generation
 * lands in the middle of the shared indexes and the last one's at their end, which alone made
 * identical resyncs differ by 10–30 %). One panel gets work state on a tenth of its rows
 * (BENCH_WORKED; bench/lib/work-state.ts). Then BENCH_RESYNC_ROUNDS (7) rounds of a full resync of
 * each, the order swapped every round so neither always follows the other; after every resync of
 * the worked panel it counts the worked rows that still carry their work (`lost`: the most missing
 * after one).
 */
async function resyncWork() {
  const rounds = Number(process.env.BENCH_RESYNC_ROUNDS ?? 7)
  const open = async (which: 'work' | 'plain') => {
    const config = benchConfig(`resync-${which}.db`)
    const { db } = await openDatabase(config)
    const deps = await buildDeps(config, {
      db,
      storage: createStorage({ driver: memoryDriver() }),
      files: nodeFileStore(dir),
      sha256Hex,
      log: createLogger('warn'),
    })
    const ctx: ServiceContext = {
      ...deps,
      scope: { tenantId: 'bench', userId: 'bench', isAdmin: false, groups: [] },
      meta: { requestId: 'bench', source: 'system' },
    }
    const panel = await createPanel(ctx, { name: `Bench ${which}`, tenantId: 'bench', userId: 'bench' } as never)
    await createCsvColumns(ctx, panel.id)
    const source = await createDataSource(ctx, panel.id, {
      type: 'csv',
      config: { filePath: target, format: 'csv', keyField: 'id' },
    } as never)
    if (source.syncStatus !== 'success') throw new Error(`sync ended in ${source.syncStatus}: ${source.errorMessage}`)
    return { ctx, db, panelId: panel.id, sourceId: source.id }
  }
  const panels = { work: await open('work'), plain: await open('plain') }
  const [{ n }] = await panels.work.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM records`)
  const rows = Number(n)
  const toWork = Number(process.env.BENCH_WORKED ?? Math.round(rows / 10))
  const worked = toWork > 0 ? await seedWorkState(panels.work.db, panels.work.panelId, toWork) : 0
  if ((await workedRows(panels.plain.db, panels.plain.panelId)) !== 0) throw new Error('the plain panel has work state')
  const times = { work: [] as number[], plain: [] as number[] }
  let lost = 0
  const resync = async (which: 'work' | 'plain') => {
    const { ctx, db, panelId, sourceId } = panels[which]
    const t0 = performance.now()
    const answer = await syncDataSource(ctx, sourceId)
    const elapsed = (performance.now() - t0) / 1000
    if (answer.background || answer.result.status !== 'success') throw new Error(`the ${which} resync did not succeed`)
    if (answer.result.recordsProcessed !== rows) throw new Error(`a resync of ${answer.result.recordsProcessed} rows`)
    times[which].push(elapsed)
    if (which === 'work') lost = Math.max(lost, worked - (await workedRows(db, panelId)))
  }
  for (let i = 0; i < rounds; i++) {
    for (const which of i % 2 === 0 ? (['work', 'plain'] as const) : (['plain', 'work'] as const)) await resync(which)
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]
  const peakRssMiB = process.resourceUsage().maxRSS / 1024
  console.log(
    JSON.stringify({
      rows,
      seconds: median(times.work),
      peakRssMiB,
      worked,
      lost,
      plainSeconds: median(times.plain),
      work: times.work,
      plain: times.plain,
    }),
  )
}

/**
 * The baseline: the same rows stored in the same `records` table (same indexes) by plain multi-row
 * INSERTs, 500 rows per statement, one batch per 1000 rows, parsed and keyed before the clock
 * starts. `bare` uses the keys the sync gives keyless rows (128-bit content hashes, so the key index
 * is written in random order, as the sync must); `bare-seq` uses sequential keys, for comparison.
 */
async function bareInsert(
  client: Awaited<ReturnType<typeof openDatabase>>['client'],
  csv: string,
  sequential: boolean,
): Promise<number> {
  const lines = csv.split('\n').filter(Boolean)
  const header = lines[0].split(',')
  const data = lines.slice(1).map((line) => {
    const cells = line.split(',')
    return JSON.stringify(Object.fromEntries(header.map((h, i) => [h, cells[i]])))
  })
  const keys = data.map((json, i) => (sequential ? String(i).padStart(10, '0') : sha256Hex(json).slice(0, 32)))
  const now = new Date().toISOString()
  await client.batch(
    [
      {
        sql: "INSERT INTO panels (id, tenant_id, user_id, name, cohort_rule, created_at, updated_at) VALUES (1, 'bench', 'bench', 'Bench', '{}', ?, ?)",
        args: [now, now],
      },
      {
        sql: "INSERT INTO data_sources (id, tenant_id, user_id, panel_id, type, config, created_at, updated_at) VALUES (1, 'bench', 'bench', 1, 'csv', '{}', ?, ?)",
        args: [now, now],
      },
    ],
    'write',
  )
  const t0 = performance.now()
  for (let i = 0; i < data.length; i += 1000) {
    const statements = []
    for (let j = i; j < Math.min(i + 1000, data.length); j += 500) {
      const chunk = data.slice(j, j + 500)
      const args: (string | number)[] = []
      for (let k = 0; k < chunk.length; k++) args.push('bench', 1, 1, 1, keys[j + k], chunk[k], now, now)
      statements.push({
        sql: `INSERT INTO records (tenant_id, panel_id, data_source_id, generation, key, data, created_at, updated_at) VALUES ${chunk.map(() => '(?,?,?,?,?,?,?,?)').join(',')}`,
        args,
      })
    }
    await client.batch(statements, 'write')
  }
  const seconds = (performance.now() - t0) / 1000
  report(data.length, seconds)
  process.exit(0)
}

function report(rows: number, seconds: number) {
  const peakRssMiB = process.resourceUsage().maxRSS / 1024
  console.log(JSON.stringify({ rows, seconds, peakRssMiB }))
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
