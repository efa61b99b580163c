/**
 * One build's run of the sync part of `npm run bench:live`, in its own process: a panel with 10
 * base columns and 3 views over a 100,000-row CSV source, synchronised once; then measured:
 *   nochange  the same file synchronised again (no row moves in or out of any view)
 *   touched   a file where 10,000 rows change a value no view filters on (no moves; row.updated)
 *   moves     a file where 10,000 rows cross the first view's filter (in and out)
 * Runs against whichever source tree it is bundled from (this checkout, or the baseline commit's),
 * so it uses only service functions both have. Prints one JSON line.
 */
import { join } from 'node:path'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { parseConfig } from '../src/config.ts'
import { buildDeps } from '../src/deps.ts'
import { createLogger } from '../src/lib/logger.ts'
import { createBaseColumn } from '../src/modules/columns/columns.service.ts'
import { createDataSource, syncDataSource } from '../src/modules/datasources/datasources.service.ts'
import { createPanel } from '../src/modules/panels/panels.service.ts'
import { createView } from '../src/modules/views/views.service.ts'
import { sha256Hex } from '../src/runtime/node-crypto.ts'
import { nodeFileStore } from '../src/runtime/node-files.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'

const [dir, name, same, moved, touched] = process.argv.slice(2)

const FIELDS = ['id', 'family', 'given', 'gender', 'birthDate', 'city', 'postalCode', 'mrn', 'hba1c', 'lastVisit']
const TYPES: Record<string, string> = { birthDate: 'date', lastVisit: 'date', hba1c: 'number' }

async function main() {
  const config = parseConfig({
    DATABASE_URL: `file:${join(dir, `${name}.db`)}`,
    FILES_DIR: dir,
    JWT_SECRET: 'bench-secret-0123456789-0123456789-abcdef',
    ENCRYPTION_KEY: 'bench-encryption-key',
    LOG_LEVEL: 'warn',
  })
  const { db, client } = await openDatabase(config)
  const deps = await buildDeps(config, {
    db,
    storage: createStorage({ driver: memoryDriver() }),
    files: nodeFileStore(dir),
    sha256Hex,
    log: createLogger('warn'),
  })
  const ctx = {
    ...deps,
    scope: { tenantId: 'bench', userId: 'bench', isAdmin: false, groups: [] },
    meta: { requestId: 'bench', source: 'system' },
  } as never
  const panel = await createPanel(ctx, { name: 'Bench', tenantId: 'bench', userId: 'bench' } as never)
  for (const field of FIELDS) {
    await createBaseColumn(ctx, panel.id, {
      name: field,
      sourceField: field,
      type: TYPES[field] ?? 'text',
      properties: {},
      metadata: {},
    } as never)
  }
  const view = (n: string, filters: unknown[]) =>
    createView(ctx, {
      name: n,
      panelId: panel.id,
      description: '',
      config: { columns: [], groupBy: [], layout: 'table' },
      metadata: {},
      filters,
      sorting: [],
      columnVisibility: {},
      aggregations: [],
    } as never)
  await view('High HbA1c', [{ columnTitle: 'hba1c', operator: 'greaterThanOrEqual', value: 9 }])
  await view('Leeds', [{ columnTitle: 'city', operator: 'equals', value: 'Leeds' }])
  await view('Women seen in March', [
    { columnTitle: 'gender', operator: 'equals', value: 'female' },
    { columnTitle: 'lastVisit', operator: 'greaterThanOrEqual', value: '2026-03-01' },
  ])
  // Keyed by id, so a changed row keeps its identity (a keyless row's key is its content's hash).
  const source = await createDataSource(ctx, panel.id, {
    type: 'csv',
    config: { filePath: same, format: 'csv', keyField: 'id' },
  } as never)
  if (source.syncStatus !== 'success') throw new Error(`initial sync: ${source.syncStatus} ${source.errorMessage}`)
  const timed = async () => {
    const t0 = performance.now()
    const out = await syncDataSource(ctx, source.id)
    const seconds = (performance.now() - t0) / 1000
    if (out.background || out.result.status !== 'success') throw new Error('sync failed')
    return seconds
  }
  // One resync untimed first, in both builds: the steady state of a scheduled source, not the
  // checkpoint of the initial load's write-ahead log (its rows, and here its entered events).
  await timed()
  const nochange = await timed()
  // 10,000 rows change a value no view filters on (no row moves in or out; views showing it update).
  await client.execute({
    sql: `UPDATE data_sources SET config = json_set(config, '$.filePath', ?) WHERE id = ?`,
    args: [touched, source.id],
  })
  const touchedSeconds = await timed()
  await client.execute({
    sql: `UPDATE data_sources SET config = json_set(config, '$.filePath', ?) WHERE id = ?`,
    args: [same, source.id],
  })
  await timed()
  const events = async () => {
    try {
      const r = await client.execute(`SELECT count(*) AS n FROM events WHERE type LIKE 'row.%'`)
      return Number(r.rows[0].n)
    } catch {
      return null // the baseline build has no change feed
    }
  }
  const breakdown = async (after: number) => {
    try {
      const r = await client.execute({
        sql: `SELECT v.name || ' ' || e.type AS k, count(*) AS n FROM events e JOIN views v ON v.id = e.view_id
              WHERE e.type LIKE 'row.%' AND e.seq > ? GROUP BY 1 ORDER BY 1`,
        args: [after],
      })
      return Object.fromEntries(r.rows.map((x) => [String(x.k), Number(x.n)]))
    } catch {
      return null
    }
  }
  const head = async () => {
    try {
      return Number((await client.execute('SELECT coalesce(max(seq), 0) AS n FROM events')).rows[0].n)
    } catch {
      return 0
    }
  }
  const before = await events()
  const mark = await head()
  await client.execute({
    sql: `UPDATE data_sources SET config = json_set(config, '$.filePath', ?) WHERE id = ?`,
    args: [moved, source.id],
  })
  const moves = await timed()
  const after = await events()
  const rowEvents = before === null || after === null ? null : after - before
  const byView = await breakdown(mark)
  console.log(
    JSON.stringify({
      nochange,
      touched: touchedSeconds,
      moves,
      rowEvents,
      byView,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
    }),
  )
  await deps.close()
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
