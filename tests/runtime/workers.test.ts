import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import ExcelJS from 'exceljs'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildWorker, WORKER_LIMITS, type WorkerBundle } from '../../scripts/build-worker.ts'
import { documentedSizes, SIZE_DRIFT } from '../../scripts/docs-sizes.ts'
import { migrateLocalD1 } from '../helpers/local-d1.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../helpers/servers.ts'
import { tomlList, tomlString, wranglerToml } from '../helpers/wrangler-toml.ts'
import { listingSuite } from './listing.ts'
import { freePort, SMOKE_SECRET, waitFor } from './processes.ts'
import { bearer, smokeSuite } from './smoke.ts'

/** wrangler.toml's `[assets]` (binding ASSETS, the Worker first) for Miniflare. */
const assetsOf = (bundle: WorkerBundle) => ({
  directory: bundle.assetsDir,
  binding: /^\[assets\][^[]*?^binding\s*=\s*"([^"]+)"/ms.exec(wranglerToml)?.[1],
  routerConfig: { invoke_user_worker_ahead_of_assets: /^run_worker_first\s*=\s*true/m.test(wranglerToml), has_user_worker: true },
})

// The Workers entry bundled as `wrangler deploy` bundles it, in workerd through Miniflare, with a
// local D1 migrated by `wrangler d1 migrations apply --local` (the deploy step's own command) and
// a local KV namespace and a local R2 bucket: the bindings of wrangler.toml.
describe('Cloudflare Workers: the bundled entry in workerd (Miniflare, local D1, KV and R2)', () => {
  let dir = ''
  let bundle: WorkerBundle
  let mf: Miniflare | undefined
  let base = ''
  let fixture: FixtureServer | undefined

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'workers-'))
    bundle = buildWorker(join(dir, 'bundle'))
    const persist = join(dir, 'state')
    migrateLocalD1(persist)
    // `/slow` answers after 1.5 s, so an async sync is still reading when its 202 has been sent.
    fixture = await startJsonServer((req, res) => {
      if (req.url?.startsWith('/slow')) setTimeout(() => sendJson(res, 200, [{ id: 1, name: 'Ada' }]), 1_500)
      else sendJson(res, 200, [{ id: 1, name: 'Ada' }])
    })
    const port = await freePort()
    mf = new Miniflare({
      modules: true,
      modulesRoot: bundle.outdir,
      scriptPath: bundle.script,
      compatibilityDate: tomlString('compatibility_date'),
      compatibilityFlags: tomlList('compatibility_flags'),
      d1Databases: { DB: tomlString('database_id')! },
      d1Persist: join(persist, 'v3', 'd1'),
      kvNamespaces: ['CACHE'],
      r2Buckets: ['FILES'],
      r2Persist: join(persist, 'v3', 'r2'),
      assets: assetsOf(bundle),
      bindings: {
        NODE_ENV: 'production',
        JWT_SECRET: SMOKE_SECRET,
        ENCRYPTION_KEY: 'workers-encryption-key',
        RATE_LIMIT_ENABLED: 'false',
        ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
        LOG_LEVEL: 'warn',
      },
      host: '127.0.0.1',
      port,
    })
    base = (await mf.ready).origin
  }, 240_000)

  afterAll(async () => {
    await mf?.dispose()
    await fixture?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("stays within the project's 1 MiB gzip budget (and so Workers' limits), Swagger UI outside the script", () => {
    expect(bundle.gzipBytes).toBeGreaterThan(0)
    expect(bundle.gzipBytes).toBeLessThan(WORKER_LIMITS.budgetGzip)
    const swaggerUi = readFileSync(join(bundle.assetsDir, 'swagger-ui-bundle.js'), 'utf8')
    const sample = swaggerUi.slice(swaggerUi.length / 2, swaggerUi.length / 2 + 200)
    expect(readFileSync(bundle.script, 'utf8').includes(sample), 'swagger-ui-bundle.js inside the script').toBe(false)
    expect(readdirSync(bundle.assetsDir).sort()).toEqual(['LICENSE', 'NOTICE', 'swagger-ui-bundle.js', 'swagger-ui.css'])
  })

  it('docs/runtimes.md states the current bundle size (npm run docs:sizes)', () => {
    const documented = documentedSizes()
    expect(documented, 'docs/runtimes.md has no generated sizes block: npm run docs:sizes').toBeDefined()
    const drift = Math.abs(documented!.workerGzipBytes - bundle.gzipBytes) / bundle.gzipBytes
    expect(
      drift,
      `documented ${documented!.workerGzipBytes} B gzip, built ${bundle.gzipBytes} B: npm run docs:sizes`,
    ).toBeLessThan(SIZE_DRIFT)
  })

  it('answers 400 naming the runtime for Excel exports and xlsx imports (exceljs is not in the bundle)', async () => {
    const headers = await bearer(SMOKE_SECRET, 'xlsx-tenant', 'alice')
    const who = { tenantId: 'xlsx-tenant', userId: 'alice' }
    const post = async (path: string, body: unknown) =>
      (await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify({ ...who, ...(body as object) }) })).json()
    const panel = await post('/api/panels', { name: 'Xlsx' })
    const view = await post('/api/views', { name: 'V', panelId: panel.id })
    const excel = await fetch(`${base}/api/views/${view.id}/export?format=excel&tenantId=xlsx-tenant&userId=alice`, { headers })
    expect(excel.status).toBe(400)
    expect((await excel.json()).message).toBe('Excel exports are not available on the workers runtime; export as csv or json')

    const workbook = new ExcelJS.Workbook()
    workbook.addWorksheet('Patients').addRows([['MRN'], ['X1']])
    const form = new FormData()
    form.set(
      'config',
      JSON.stringify({
        format: 'excel',
        mapping: [{ sourceField: 'MRN', targetColumn: 'MRN' }],
        options: { createColumns: true },
      }),
    )
    form.set('file', new Blob([new Uint8Array(await workbook.xlsx.writeBuffer())]), 'patients.xlsx')
    const imported = await fetch(`${base}/api/panels/${panel.id}/import?tenantId=xlsx-tenant&userId=alice`, {
      method: 'POST',
      headers: { authorization: headers.authorization },
      body: form,
    })
    expect(imported.status).toBe(400)
    expect((await imported.json()).message).toContain('Excel files cannot be read on this runtime')
  })

  smokeSuite(() => ({ base, secret: SMOKE_SECRET, noPdf: 'workers' }))

  listingSuite(() => ({ base, secret: SMOKE_SECRET }))

  it('finishes an async sync after its 202 (the work is kept alive by waitUntil)', async () => {
    const headers = await bearer(SMOKE_SECRET, 'async-tenant', 'alice')
    const who = { tenantId: 'async-tenant', userId: 'alice' }
    const panel = await (
      await fetch(`${base}/api/panels`, { method: 'POST', headers, body: JSON.stringify({ name: 'Async', ...who }) })
    ).json()
    const created = await fetch(`${base}/api/panels/${panel.id}/datasources`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Slow API', type: 'api', config: { apiEndpoint: `${fixture!.url}/slow` }, ...who }),
    })
    expect(created.status).toBe(201)
    const source = await created.json()
    const started = await fetch(`${base}/api/datasources/${source.id}/sync?async=true&tenantId=async-tenant`, {
      method: 'POST',
      headers,
      body: '{}',
    })
    expect(started.status).toBe(202)
    const run = await started.json()
    expect(run.status).toBe('syncing')
    const done = await waitFor(20_000, 'the async sync run to end', async () => {
      const runs = await (await fetch(`${base}/api/datasources/${source.id}/sync-runs?tenantId=async-tenant`, { headers })).json()
      const found = (runs.syncRuns ?? runs.data ?? runs).find((r: { id: number }) => r.id === run.id)
      return found && found.status !== 'syncing' ? found : undefined
    })
    expect(done).toMatchObject({ id: run.id, status: 'success', rowsWritten: 1 })
    const rows = await (await fetch(`${base}/api/panels/${panel.id}/rows?tenantId=async-tenant`, { headers })).json()
    expect(rows.meta.total).toBe(1)
  })

  it('reports the KV cache in /health', async () => {
    const health = await (await fetch(`${base}/health`)).json()
    expect(health.redis).toEqual({ status: 'up', driver: 'kv' })
  })

  it('uploads a CSV to a file source, stores it in R2 and syncs it from there on workerd', async () => {
    const headers = await bearer(SMOKE_SECRET, 'files-tenant', 'alice')
    const who = { tenantId: 'files-tenant', userId: 'alice' }
    const q = 'tenantId=files-tenant&userId=alice'
    const post = async (path: string, body: object) =>
      fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify({ ...who, ...body }) })
    const panel = await (await post('/api/panels', { name: 'Files' })).json()
    expect((await post(`/api/panels/${panel.id}/columns/base`, { name: 'Name', sourceField: 'name', type: 'text' })).status).toBe(
      201,
    )
    const created = await post(`/api/panels/${panel.id}/datasources`, {
      name: 'CSV',
      type: 'csv',
      config: { filePath: 'pending.csv', keyField: 'id' },
    })
    expect(created.status).toBe(201)
    const source = await created.json()
    expect(source.errorMessage).toBe("File 'pending.csv' does not exist in the files folder")

    const upload = (body: BodyInit, init: RequestInit = {}, query = '') =>
      fetch(`${base}/api/datasources/${source.id}/file?${q}${query}`, {
        method: 'PUT',
        ...init,
        headers: { authorization: headers.authorization, ...(init.headers as object) },
        body,
      } as RequestInit)
    const raw = await upload('id,name\n1,Ada\n2,Grace\n', { headers: { 'content-type': 'text/csv' } }, '&filename=patients.csv')
    const synced = await raw.json()
    expect(raw.status).toBe(200)
    expect(synced).toMatchObject({ syncStatus: 'success', recordsProcessed: 2 })
    expect(synced.config.filePath).toMatch(new RegExp(`^uploads/files-tenant-[0-9a-f]{16}/${source.id}/patients\\.csv$`))
    const bucket = await mf!.getR2Bucket('FILES')
    expect(await (await bucket.get(synced.config.filePath))?.text()).toBe('id,name\n1,Ada\n2,Grace\n')
    const rows = await (await fetch(`${base}/api/panels/${panel.id}/rows?sort=Name&${q}`, { headers })).json()
    expect(rows.data.map((r: { Name: string }) => r.Name)).toEqual(['Ada', 'Grace'])

    // A body without Content-Length (chunked) goes to R2 in multipart parts: here two (5 MiB + rest).
    // Its source reads 5 rows (maxRows): the whole file is in R2, the sync stays small for local D1.
    const bigSource = await (
      await post(`/api/panels/${panel.id}/datasources`, {
        name: 'Big',
        type: 'csv',
        config: { filePath: 'none.csv', maxRows: 5 },
      })
    ).json()
    const note = 'x'.repeat(20_000)
    const lines = ['id,name,note', ...Array.from({ length: 300 }, (_, i) => `b${i},Patient ${i},${note}`)]
    const big = new TextEncoder().encode(`${lines.join('\n')}\n`)
    expect(big.byteLength).toBeGreaterThan(5 * 1024 * 1024)
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < big.byteLength; i += 256 * 1024) c.enqueue(big.subarray(i, i + 256 * 1024))
        c.close()
      },
    })
    const streamed = await fetch(`${base}/api/datasources/${bigSource.id}/file?${q}&filename=big.csv`, {
      method: 'PUT',
      headers: { authorization: headers.authorization },
      body: chunked,
      duplex: 'half',
    } as RequestInit)
    const bigSynced = await streamed.json()
    expect(streamed.status).toBe(200)
    expect(bigSynced).toMatchObject({ syncStatus: 'success', recordsProcessed: 5 })
    const stored = await bucket.get(bigSynced.config.filePath)
    expect(Buffer.from(await stored!.arrayBuffer()).equals(big)).toBe(true)
    expect((await fetch(`${base}/api/datasources/${bigSource.id}?${q}`, { method: 'DELETE', headers })).status).toBe(204)

    // Over the source's maxFileSize while streaming (no Content-Length): 413, the multipart upload aborted.
    const small = await (
      await post(`/api/panels/${panel.id}/datasources`, {
        name: 'Small',
        type: 'csv',
        config: { filePath: 'none.csv', maxFileSize: 100 },
      })
    ).json()
    const tooBig = await fetch(`${base}/api/datasources/${small.id}/file?${q}&filename=small.csv`, {
      method: 'PUT',
      headers: { authorization: headers.authorization },
      body: new Blob([`id\n${'1\n'.repeat(500)}`]).stream(),
      duplex: 'half',
    } as RequestInit)
    expect(tooBig.status).toBe(413)
    expect(
      (await bucket.list({ prefix: synced.config.filePath.replace(/\/\d+\/patients\.csv$/, `/${small.id}/`) })).objects,
    ).toEqual([])

    // multipart/form-data (a file of known size) and a file put in the bucket by hand.
    const form = new FormData()
    form.set('file', new File(['id,name\n7,Alan\n'], 'form.csv', { type: 'text/csv' }))
    expect(await (await upload(form)).json()).toMatchObject({ syncStatus: 'success', recordsProcessed: 1 })
    expect(await bucket.head(synced.config.filePath)).toBeNull()
    await bucket.put('exports/ward-3.csv', 'id,name\n9,Edsger\n')
    const own = await post(`/api/panels/${panel.id}/datasources`, {
      name: 'Export',
      type: 'csv',
      config: { filePath: 'exports/ward-3.csv' },
    })
    expect(await own.json()).toMatchObject({ syncStatus: 'success', errorMessage: null })
    const all = await (await fetch(`${base}/api/panels/${panel.id}/rows?sort=Name&${q}`, { headers })).json()
    expect(all.data.map((r: { Name: string }) => r.Name)).toEqual(['Alan', 'Edsger'])
  })

  it('runs due syncs from the cron trigger (scheduled → runMaintenanceTick on D1)', async () => {
    const headers = await bearer(SMOKE_SECRET, 'cron-tenant', 'alice')
    const who = { tenantId: 'cron-tenant', userId: 'alice' }
    const panel = await (
      await fetch(`${base}/api/panels`, { method: 'POST', headers, body: JSON.stringify({ name: 'Cron', ...who }) })
    ).json()
    const created = await fetch(`${base}/api/panels/${panel.id}/datasources`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        name: 'Every minute',
        type: 'api',
        config: { apiEndpoint: fixture!.url, schedule: '* * * * *' },
        ...who,
      }),
    })
    expect(created.status).toBe(201)
    const source = await created.json()
    const before = fixture!.requests.length

    const worker = await mf!.getWorker()
    const result = await worker.scheduled({ cron: '*/5 * * * *', scheduledTime: new Date(Date.now() + 120_000) })
    expect(result.outcome).toBe('ok')

    expect(fixture!.requests.length).toBeGreaterThan(before)
    const runs = await (await fetch(`${base}/api/datasources/${source.id}/sync-runs?tenantId=cron-tenant`, { headers })).json()
    const scheduled = (runs.syncRuns ?? runs.data ?? runs).filter((r: { trigger: string }) => r.trigger === 'schedule')
    expect(scheduled).toHaveLength(1)
    expect(scheduled[0].status).toBe('success')
  })

  it('moves rows with time from the cron trigger: expired claims freed, one row.overdue (docs/worklist.md "Time rules")', async () => {
    const headers = await bearer(SMOKE_SECRET, 'time-tenant', 'alice')
    const who = { tenantId: 'time-tenant', userId: 'alice' }
    const panel = await (
      await fetch(`${base}/api/panels`, { method: 'POST', headers, body: JSON.stringify({ name: 'Time', ...who }) })
    ).json()
    const source = await fetch(`${base}/api/panels/${panel.id}/datasources`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Once', type: 'api', config: { apiEndpoint: fixture!.url, keyField: 'id' }, ...who }),
    })
    expect(source.status).toBe(201)
    const rows = await (await fetch(`${base}/api/panels/${panel.id}/rows?tenantId=time-tenant`, { headers })).json()
    const rowId = rows.data[0]._id
    const row = `${base}/api/panels/${panel.id}/rows/${rowId}`
    const dueAt = new Date(Date.now() + 30_000).toISOString()
    const patched = await fetch(`${row}/work`, { method: 'PATCH', headers, body: JSON.stringify({ dueAt }) })
    expect(patched.status).toBe(200)
    expect((await fetch(`${row}/claim`, { method: 'POST', headers, body: JSON.stringify({ leaseSeconds: 10 }) })).status).toBe(
      200,
    )

    const worker = await mf!.getWorker()
    const feed = async () =>
      (await (await fetch(`${base}/api/panels/${panel.id}/events?types=row.overdue,row.work_updated`, { headers })).json())
        .events as { type: string; data: Record<string, unknown> }[]
    // A cron run at its scheduled time a minute from now: both have passed.
    for (const _ of [1, 2]) {
      const result = await worker.scheduled({ cron: '*/5 * * * *', scheduledTime: new Date(Date.now() + 60_000) })
      expect(result.outcome).toBe('ok')
    }
    const events = await feed()
    expect(events.filter((e) => e.type === 'row.overdue').map((e) => e.data)).toEqual([
      expect.objectContaining({ rowId, dueAt, panelId: panel.id }),
    ])
    const freed = events.filter((e) => e.type === 'row.work_updated' && e.data.cause === 'lease_expired')
    expect(freed).toHaveLength(1)
    expect((await (await fetch(row, { headers })).json())._work).toMatchObject({ assignee: null, claimExpiresAt: null })
  })
})

describe('Cloudflare Workers: configuration and per-isolate state', () => {
  let dir = ''
  let bundle: WorkerBundle
  const started: Miniflare[] = []
  const workerd = (bindings: Record<string, string>, extra: Partial<ConstructorParameters<typeof Miniflare>[0]> = {}) => {
    const mf = new Miniflare({
      modules: true,
      modulesRoot: bundle.outdir,
      scriptPath: bundle.script,
      compatibilityDate: tomlString('compatibility_date'),
      compatibilityFlags: tomlList('compatibility_flags'),
      bindings,
      ...extra,
    } as ConstructorParameters<typeof Miniflare>[0])
    started.push(mf)
    return mf
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'workers-config-'))
    bundle = buildWorker(join(dir, 'bundle'))
  }, 240_000)

  afterAll(async () => {
    for (const mf of started) await mf.dispose()
    rmSync(dir, { recursive: true, force: true })
  })

  it('answers 500 without crashing when misconfigured, and logs every bad variable at once', async () => {
    let stderr = ''
    const mf = workerd(
      { NODE_ENV: 'production' },
      {
        handleRuntimeStdio(stdout: Readable, err: Readable) {
          stdout.resume()
          err.on('data', (d: Buffer) => {
            stderr += d
          })
        },
      },
    )
    for (let i = 0; i < 2; i++) {
      const res = await mf.dispatchFetch('http://localhost/health')
      expect(res.status).toBe(500)
      expect(((await res.json()) as { code: string }).code).toBe('INTERNAL_ERROR')
    }
    for (const variable of ['JWT_SECRET:', 'ENCRYPTION_KEY:', 'DATABASE_URL: Workers need the D1 binding DB']) {
      expect(stderr).toContain(variable)
    }
  })

  it('refuses uploads with 400 naming the workers runtime and the FILES binding when no R2 bucket is bound', async () => {
    const mf = workerd(
      { NODE_ENV: 'production', JWT_SECRET: SMOKE_SECRET, ENCRYPTION_KEY: 'k', LOG_LEVEL: 'silent' },
      { d1Databases: ['DB'], kvNamespaces: ['CACHE'] },
    )
    const { authorization } = await bearer(SMOKE_SECRET, 'bare', 'alice')
    const res = await mf.dispatchFetch('http://localhost/api/datasources/1/file?tenantId=bare&userId=alice', {
      method: 'PUT',
      headers: { authorization, 'content-type': 'text/csv' },
      body: 'id\n1\n',
    })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { message: string }).message).toBe(
      'Uploading a file needs file storage, which the workers runtime was not given: bind an R2 bucket as FILES in ' +
        'wrangler.toml ([[r2_buckets]]), or use an api, fhir, database or webhook source',
    )
  })

  it('keeps rate-limit windows per isolate across requests (deps are per request)', async () => {
    const mf = workerd(
      { NODE_ENV: 'production', JWT_SECRET: SMOKE_SECRET, ENCRYPTION_KEY: 'k', RATE_LIMIT_PANELS: '2/60', LOG_LEVEL: 'silent' },
      { d1Databases: ['DB'], kvNamespaces: ['CACHE'] },
    )
    const { authorization } = await bearer(SMOKE_SECRET, 'limited', 'alice')
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) {
      const res = await mf.dispatchFetch('http://localhost/api/changes/panels', { headers: { authorization } })
      statuses.push(res.status)
      await res.arrayBuffer()
    }
    expect(statuses.slice(0, 2).every((s) => s !== 429)).toBe(true)
    expect(statuses[2]).toBe(429)
  })
})
