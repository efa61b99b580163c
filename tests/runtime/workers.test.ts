import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildWorker, WORKER_LIMITS, type WorkerBundle } from '../../scripts/build-worker.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../helpers/servers.ts'
import { listingSuite } from './listing.ts'
import { freePort, SMOKE_SECRET, waitFor } from './processes.ts'
import { bearer, smokeSuite } from './smoke.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const wranglerToml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8')
const toml = (key: string) => new RegExp(`^${key}\\s*=\\s*"([^"]+)"`, 'm').exec(wranglerToml)?.[1]

// The Workers entry bundled as `wrangler deploy` bundles it, in workerd through Miniflare, with a
// local D1 migrated by `wrangler d1 migrations apply --local` (the deploy step's own command) and
// a local KV namespace: the bindings of wrangler.toml.
describe('Cloudflare Workers: the bundled entry in workerd (Miniflare, local D1 and KV)', () => {
  let dir = ''
  let bundle: WorkerBundle
  let mf: Miniflare | undefined
  let base = ''
  let fixture: FixtureServer | undefined

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'workers-'))
    bundle = buildWorker(join(dir, 'bundle'))
    const persist = join(dir, 'state')
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/wrangler/bin/wrangler.js'),
        'd1',
        'migrations',
        'apply',
        'panels',
        '--local',
        '--persist-to',
        persist,
      ],
      { cwd: ROOT, stdio: 'pipe', timeout: 120_000, env: { ...process.env, CI: 'true', WRANGLER_SEND_METRICS: 'false' } },
    )
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
      compatibilityDate: toml('compatibility_date'),
      compatibilityFlags: ['nodejs_compat'],
      d1Databases: { DB: toml('database_id')! },
      d1Persist: join(persist, 'v3', 'd1'),
      kvNamespaces: ['CACHE'],
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

  it("stays within Workers' size limit (gzip)", () => {
    expect(bundle.gzipBytes).toBeGreaterThan(0)
    expect(bundle.gzipBytes).toBeLessThan(WORKER_LIMITS.freeGzip)
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

  it('refuses file features with 400 naming the workers runtime, and keeps serving', async () => {
    const headers = await bearer(SMOKE_SECRET, 'files-tenant', 'alice')
    const who = { tenantId: 'files-tenant', userId: 'alice' }
    const panel = await (
      await fetch(`${base}/api/panels`, { method: 'POST', headers, body: JSON.stringify({ name: 'Files', ...who }) })
    ).json()
    const sources = `${base}/api/panels/${panel.id}/datasources`
    const file = await fetch(sources, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'CSV', type: 'file', config: { filePath: 'patients.csv' }, ...who }),
    })
    expect(file.status).toBe(400)
    expect(JSON.stringify(await file.json())).toContain('needs a file system, which the workers runtime does not have')

    const api = await fetch(sources, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'API', type: 'api', config: { apiEndpoint: fixture!.url }, ...who }),
    })
    const source = await api.json()
    const upload = await fetch(`${base}/api/datasources/${source.id}/file?tenantId=files-tenant&userId=alice`, {
      method: 'PUT',
      headers: { authorization: headers.authorization, 'content-type': 'text/csv' },
      body: 'id,name\n1,Ada\n',
    })
    expect(upload.status).toBe(400)
    expect((await upload.json()).message).toContain('which the workers runtime does not have')
    expect((await fetch(`${base}/health`)).status).toBe(200)
  })

  it('runs due syncs from the cron trigger (scheduled → runDueSyncs on D1)', async () => {
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
      compatibilityDate: toml('compatibility_date'),
      compatibilityFlags: ['nodejs_compat'],
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
