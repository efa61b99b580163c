/**
 * `npm run bench:import`: CSV imports through the app (`app.request`, real token) on a libSQL file
 * database in WAL mode, each into a panel of its own with MRN (text), Name (text), Age (number) and
 * one calculated column:
 *   - append: BENCH_ROWS rows without uniqueFields;
 *   - keyed: the same rows with uniqueFields MRN into an empty panel (every row looked up, inserted);
 *   - update: that file again with updateExisting (every row matched and updated);
 *   - small: 100 rows with uniqueFields MRN into the keyed panel (the lookup against every stored row).
 * BENCH_ROWS (50000) tunes it; BENCH_KEEP_DIR=1 keeps the database for a look.
 */
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { createApp } from '../src/app.ts'
import { buildDeps } from '../src/deps.ts'
import { createLogger } from '../src/lib/logger.ts'
import { signToken } from '../src/lib/tokens.ts'
import { sha256Hex } from '../src/runtime/node-crypto.ts'
import { nodeFileStore } from '../src/runtime/node-files.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'
import { BENCH_SECRET, benchConfig, inTempDir } from './lib/temp-dir.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 50_000)
const SECRET = BENCH_SECRET

const main = () => inTempDir('panels-bench-import-', run)

async function run(dir: string) {
  const config = benchConfig(dir, 'import.db', { IMPORT_MAX_BYTES: String(200 * 1024 * 1024) })
  const { db } = await openDatabase(config)
  const deps = await buildDeps(config, {
    db,
    storage: createStorage({ driver: memoryDriver() }),
    files: nodeFileStore(dir),
    sha256Hex,
    log: createLogger('error'),
  })
  const app = createApp(() => deps)
  const token = await signToken(SECRET, { tenantId: 'bench', userId: 'bench' })
  const json = async (path: string, body: unknown) => {
    const res = await app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    if (res.status >= 400) throw new Error(`POST ${path} → ${res.status}: ${await res.text()}`)
    return res.json()
  }
  const panel = async (name: string) => {
    const p = await json('/api/panels', { name, tenantId: 'bench', userId: 'bench' })
    for (const [column, type] of [
      ['MRN', 'text'],
      ['Name', 'text'],
      ['Age', 'number'],
    ]) {
      await json(`/api/panels/${p.id}/columns/base`, { name: column, sourceField: column, type })
    }
    await json(`/api/panels/${p.id}/columns/calculated`, { name: 'Senior', formula: '{Age} >= 65', type: 'boolean' })
    return p.id as number
  }
  const csv = (from: number, count: number) =>
    `MRN,Name,Age\n${Array.from({ length: count }, (_, i) => `M${from + i},Patient ${from + i},${(from + i) % 100}`).join('\n')}\n`
  const importCsv = async (panelId: number, content: string, extra: Record<string, unknown>) => {
    const form = new FormData()
    form.set('file', new File([content], 'rows.csv'))
    form.set(
      'config',
      JSON.stringify({
        format: 'csv',
        mapping: ['MRN', 'Name', 'Age'].map((f) => ({ sourceField: f, targetColumn: f })),
        ...extra,
      }),
    )
    const t0 = performance.now()
    const res = await app.request(`/api/panels/${panelId}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: form,
    })
    const seconds = (performance.now() - t0) / 1000
    const report = await res.json()
    if (res.status !== 200) throw new Error(`import → ${res.status}: ${JSON.stringify(report)}`)
    return { seconds, report }
  }
  const line = (name: string, r: { seconds: number; report: Record<string, unknown> }) =>
    console.log(
      `${name.padEnd(8)} ${r.seconds.toFixed(2)} s  imported ${r.report.rowsImported}, updated ${r.report.rowsUpdated}, rejected ${r.report.rowsRejected}`,
    )

  const file = csv(0, ROWS)
  console.log(`bench:import, ${ROWS} rows`)
  line('append', await importCsv(await panel('Append'), file, {}))
  const keyedPanel = await panel('Keyed')
  const keyed = { validation: { uniqueFields: ['MRN'] } }
  line('keyed', await importCsv(keyedPanel, file, keyed))
  line('update', await importCsv(keyedPanel, file, { ...keyed, options: { updateExisting: true } }))
  line('small', await importCsv(keyedPanel, csv(ROWS - 50, 100), { ...keyed, options: { updateExisting: true } }))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
