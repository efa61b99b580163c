/**
 * `npm run bench:fhir:group` (issue 24, benchmarks): a patient list of 10,000 members read as a FHIR
 * Group beside the JSON rows endpoint reading the same rows, in the same run, call by call
 * (bench/lib/interleaved.ts), in-process through the app (`app.request`, real tokens) on a libSQL
 * file database:
 *   - `GET /fhir/Group/{id}`: the whole list, 10,000 members inline (the read's cap);
 *   - the JSON rows endpoint over the same 10,000 rows: its largest page is 100 rows
 *     (`GET /api/views/{id}/rows?limit=100`), so the same rows are 100 pages read one after the other;
 *   - like for like at the JSON endpoint's largest page: `$getpage?count=100` beside one JSON page of
 *     100, at the same offsets.
 * Goal: the Group read's p50 within 2× the JSON endpoint's for the same rows. The panel is built from
 * synthetic FHIR Patients (an NDJSON file source) with six columns; the workflow names `PatientId`
 * (Patient.id) as the patient column, so every row is a member. The view sorts by family name and
 * birth date, so both endpoints read the view's stored members in its order. Peak RSS per phase.
 * BENCH_ROWS (10000) and BENCH_REPEAT (20) tune it.
 */
import { closeSync, openSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { patient } from './lib/fhir-patients.ts'
import { inProcessService } from './lib/in-process-service.ts'
import { interleaved, turn } from './lib/interleaved.ts'
import { mib, rssTracker } from './lib/rss.ts'
import { inTempDir } from './lib/temp-dir.ts'

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000)
const REPEAT = Number(process.env.BENCH_REPEAT ?? 20)
/** The JSON rows endpoint's largest page (`limit` 1–100). */
const JSON_PAGE = 100

const main = () => inTempDir('panels-bench-fhir-group-', run)

async function run(dir: string) {
  const rss = rssTracker()
  rss.phase('service start (deps and app)')
  const { deps, call, json } = await inProcessService(dir, 'group.db')

  rss.phase('rows generated, panel, columns, workflow, sync and view')
  const file = openSync(join(dir, 'patients.ndjson'), 'w')
  try {
    for (let from = 0; from < ROWS; from += 10_000) {
      const lines: string[] = []
      for (let i = from; i < Math.min(ROWS, from + 10_000); i++) lines.push(JSON.stringify(patient(i)))
      writeSync(file, `${from > 0 ? '\n' : ''}${lines.join('\n')}`)
      await turn()
    }
  } finally {
    closeSync(file)
  }
  const panel = await json('POST', '/api/panels', { name: 'Bench list', tenantId: 'bench', userId: 'bench' })
  const columns: [string, string, string][] = [
    ['PatientId', 'Patient.id', 'text'],
    ['Family', 'Patient.name.family.first()', 'text'],
    ['Given', 'Patient.name.given.first()', 'text'],
    ['Gender', 'Patient.gender', 'text'],
    ['Birth Date', 'Patient.birthDate', 'date'],
    ['City', 'Patient.address.city.first()', 'text'],
  ]
  for (const [name, fhirPath, type] of columns)
    await json('POST', `/api/panels/${panel.id}/columns/base`, { name, fhirPath, type })
  await json('PUT', `/api/panels/${panel.id}/workflow`, {
    statuses: [{ value: 'open', label: 'Open', done: false }],
    sla: null,
    claimLeaseSeconds: null,
    patientReference: 'PatientId',
  })
  const t0 = performance.now()
  const source = await json('POST', `/api/panels/${panel.id}/datasources`, {
    type: 'json',
    config: { filePath: 'patients.ndjson', format: 'json' },
  })
  if (source.syncStatus !== 'success') throw new Error(`sync failed: ${source.errorMessage}`)
  const syncSeconds = (performance.now() - t0) / 1000
  const view = await json('POST', '/api/views', {
    name: 'Everyone by family name',
    panelId: panel.id,
    config: { columns: [], groupBy: [], layout: 'table' },
    sorting: [
      { columnTitle: 'Family', direction: 'asc', priority: 1 },
      { columnTitle: 'Birth Date', direction: 'desc', priority: 2 },
    ],
  })

  // Both answer the same rows in the same order: the Group's members are the pages' PatientIds.
  rss.phase('answers checked')
  const group = await json('GET', `/fhir/Group/${view.id}`)
  const references = (group.member ?? []).map((m: { entity: { reference: string } }) => m.entity.reference)
  if (group.quantity !== ROWS || references.length !== Math.min(ROWS, 10_000)) {
    throw new Error(`the Group answered quantity ${group.quantity} and ${references.length} members`)
  }
  const pages = Math.ceil(references.length / JSON_PAGE)
  const viaRows: string[] = []
  for (let p = 1; p <= pages; p++) {
    const body = await json('GET', `/api/views/${view.id}/rows?limit=${JSON_PAGE}&page=${p}`)
    viaRows.push(...body.data.map((r: { PatientId: string }) => `Patient/${r.PatientId}`))
  }
  if (viaRows.join() !== references.join()) throw new Error('the Group and the rows endpoint answer different rows or orders')
  const path = (await call('GET', `/api/views/${view.id}/rows?limit=${JSON_PAGE}`)).headers.get('server-timing')

  rss.phase('Group read beside the JSON pages of the same rows')
  const whole = await interleaved(REPEAT, [
    {
      name: 'group',
      run: async () => {
        const body = await (await call('GET', `/fhir/Group/${view.id}`)).text()
        if (body.length < 100) throw new Error('empty Group')
      },
    },
    {
      name: 'rows',
      run: async () => {
        for (let p = 1; p <= pages; p++)
          await (await call('GET', `/api/views/${view.id}/rows?limit=${JSON_PAGE}&page=${p}`)).text()
      },
    },
  ])

  rss.phase('$getpage of 100 beside a JSON page of 100')
  const offsetOf = (i: number) => (i * 37 * JSON_PAGE) % Math.max(JSON_PAGE, references.length - JSON_PAGE)
  const small = await interleaved(REPEAT * 5, [
    {
      name: 'getpage',
      run: (i) => call('GET', `/fhir/Group/${view.id}/$getpage?offset=${offsetOf(i)}&count=${JSON_PAGE}`).then((r) => r.text()),
    },
    {
      name: 'page',
      run: (i) =>
        call('GET', `/api/views/${view.id}/rows?limit=${JSON_PAGE}&page=${offsetOf(i) / JSON_PAGE + 1}`).then((r) => r.text()),
    },
  ])

  const memory = rss.stop()
  const ratio = whole.group.p50 / whole.rows.p50
  const ms = (v: number) => `${v.toFixed(1)} ms`
  console.log(
    `\nA list of ${ROWS.toLocaleString('en')} rows; initial sync ${syncSeconds.toFixed(1)} s; JSON pages came from: ${path}`,
  )
  console.log(`${REPEAT} rounds (whole list), ${REPEAT * 5} rounds (pages of ${JSON_PAGE}), interleaved call by call\n`)
  console.log('| measure | p50 | p95 |')
  console.log('|---|---|---|')
  console.log(
    `| GET /fhir/Group/{id} (${references.length.toLocaleString('en')} members) | ${ms(whole.group.p50)} | ${ms(whole.group.p95)} |`,
  )
  console.log(
    `| GET /api/views/{id}/rows, the same rows in ${pages} pages of ${JSON_PAGE} | ${ms(whole.rows.p50)} | ${ms(whole.rows.p95)} |`,
  )
  console.log(`| GET /fhir/Group/{id}/$getpage?count=${JSON_PAGE} | ${ms(small.getpage.p50)} | ${ms(small.getpage.p95)} |`)
  console.log(`| GET /api/views/{id}/rows?limit=${JSON_PAGE} (same offsets) | ${ms(small.page.p50)} | ${ms(small.page.p95)} |`)
  console.log('\n| goal | measured | result |')
  console.log('|---|---|---|')
  console.log(
    `| Group read p50 ≤ 2× the JSON endpoint's for the same rows | ${ratio.toFixed(2)}× | ${ratio <= 2 ? 'pass' : 'FAIL'} |`,
  )
  console.log(
    `| (like for like) $getpage of ${JSON_PAGE} ÷ a JSON page of ${JSON_PAGE}, p50 | ${(small.getpage.p50 / small.page.p50).toFixed(2)}× | |`,
  )
  console.log('\n| phase | rss peak | V8 heap peak | high-water mark after |')
  console.log('|---|---|---|---|')
  for (const p of memory.phases) console.log(`| ${p.name} | ${mib(p.peak)} | ${mib(p.heapPeak)} | ${mib(p.maxRssAfter)} |`)
  await deps.close()
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
