import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lockSubset } from '../../scripts/build.ts'
import { type Service, startService, waitFor } from './processes.ts'
import { bearer } from './smoke.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SECRET = 'library-host-secret-that-is-long-enough-0123456789'
const TENANT = 'clinic-7'

// The host as its developers would write it (docs/embedding.md), plus a login that signs tokens
// and an operator's button running one scheduler step. Compiled by tsc, run by plain node.
const HOST_TS = `import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { type MaintenanceReport, openPanelService, signToken } from 'panel-service'

const panels = await openPanelService({ ...process.env })
const host = new Hono()
host.get('/', (c) => c.text('host home'))
host.post('/login/:user', async (c) =>
  c.json({ token: await signToken(process.env.JWT_SECRET!, { tenantId: '${TENANT}', userId: c.req.param('user') }) }),
)
host.post('/admin/maintenance-tick', async (c) => c.json<MaintenanceReport>(await panels.runMaintenanceTick()))
host.route('/panels-api', panels.app)
panels.startScheduler()
const server = serve({ fetch: host.fetch, hostname: '127.0.0.1', port: 0 }, (info) => console.log(\`listening \${info.port}\`))
process.on('SIGTERM', () =>
  server.close(async () => {
    await panels.close()
    console.log('closed')
    process.exit(0)
  }),
)
`

// Hono's Node starter's settings (the target's default lib, which @hono/node-server's websocket
// types need), except that every declaration file is checked.
const HOST_TSCONFIG = {
  compilerOptions: {
    strict: true,
    skipLibCheck: false,
    verbatimModuleSyntax: true,
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    types: ['node'],
    outDir: 'build',
    rootDir: '.',
  },
  files: ['host.ts', 'docs-host.ts'],
}

/** The host docs/embedding.md shows (its first TypeScript block), type-checked beside ours. */
const docsHost = () => /```ts\n([\s\S]*?)```/.exec(readFileSync(join(ROOT, 'docs/embedding.md'), 'utf8'))![1]

type LockEntry = Parameters<typeof lockSubset>[0][string]

interface Packed {
  filename: string
  integrity: string
  files: { path: string }[]
}

/**
 * The host's package.json and a package-lock.json cut from this project's lockfile (the versions
 * tested here, whose tarballs `npm ci` left in the npm cache): the packed package, the host's own
 * hono and @hono/node-server, and @types/node for its type check.
 */
function writeHostManifests(dir: string, packed: Packed) {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  const version = (name: string) => lock.packages[`node_modules/${name}`].version
  const spec = `file:${packed.filename}`
  const dependencies = { 'panel-service': spec, hono: version('hono'), '@hono/node-server': version('@hono/node-server') }
  const devDependencies = { '@types/node': version('@types/node') }
  const roots = [
    ...Object.keys(manifest.dependencies),
    ...Object.keys(manifest.peerDependencies ?? {}),
    ...Object.keys(dependencies),
  ]
  const subset = lockSubset(lock.packages, [...new Set(roots.filter((n) => n !== 'panel-service')), '@types/node'])
  const service = {
    version: manifest.version,
    resolved: spec,
    integrity: packed.integrity,
    dependencies: manifest.dependencies,
    peerDependencies: manifest.peerDependencies,
    engines: manifest.engines,
  }
  // This project's overrides (a pinned transitive version) apply to the lockfile the host's is cut from.
  const host = {
    name: 'library-host',
    version: '1.0.0',
    private: true,
    type: 'module',
    dependencies,
    devDependencies,
    overrides: manifest.overrides,
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify(host, null, 2))
  const packages = {
    '': { name: host.name, version: host.version, dependencies, devDependencies },
    'node_modules/panel-service': service,
    ...subset,
  }
  writeFileSync(
    join(dir, 'package-lock.json'),
    JSON.stringify({ name: host.name, lockfileVersion: 3, requires: true, packages }, null, 2),
  )
}

/** Every installed copy of `name` under `dir`'s node_modules, nested ones included. */
function copiesOf(dir: string, name: string, base = join(dir, 'node_modules')): string[] {
  if (!existsSync(base)) return []
  const found = existsSync(join(base, name, 'package.json')) ? [join(base, name)] : []
  for (const entry of readdirSync(base)) {
    const scoped = entry.startsWith('@') ? readdirSync(join(base, entry)).map((e) => join(entry, e)) : [entry]
    for (const pkg of scoped) found.push(...copiesOf(dir, name, join(base, pkg, 'node_modules')))
  }
  return found
}

/** A loopback JSON API whose records change on every read, so each sync is visible. */
function recordsServer() {
  let reads = 0
  const server: Server = createServer((_req, res) => {
    reads++
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify([{ id: 'p1', name: 'Ada', reads }]))
  })
  return { server, reads: () => reads }
}

describe('the packed library in a plain-Node host with its own Hono', () => {
  let dir = ''
  let packed: Packed
  const api = recordsServer()
  let apiUrl = ''

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'library-host-'))
    // npm pack runs `prepack` (npm run build:lib) first; its output precedes the JSON.
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, timeout: 180_000 }).toString()
    ;[packed] = JSON.parse(out.slice(out.search(/^\[/m)))
    writeHostManifests(dir, packed)
    writeFileSync(join(dir, 'host.ts'), HOST_TS)
    writeFileSync(join(dir, 'docs-host.ts'), docsHost())
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(HOST_TSCONFIG, null, 2))
    execFileSync('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: 'pipe',
      timeout: 180_000,
    })
    await new Promise<void>((resolve) => api.server.listen(0, '127.0.0.1', resolve))
    apiUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}/patients`
  }, 400_000)

  afterAll(async () => {
    await new Promise((resolve) => api.server.close(resolve))
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('packs the built entry, its declarations and the migrations: no sources, tests or scripts', () => {
    const paths = packed.files.map((f) => f.path)
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/lib/index.js', 'dist/lib/index.d.ts']))
    expect(paths).toContain('migrations/meta/_journal.json')
    expect(paths.filter((p) => !/^(dist\/lib\/|migrations\/|package\.json$|README\.md$)/.test(p))).toEqual([])
    expect(paths.filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))).toEqual([])
  })

  it("installs hono as a peer: the host's own copy is the only one", () => {
    const installed = JSON.parse(readFileSync(join(dir, 'node_modules/panel-service/package.json'), 'utf8'))
    expect(installed.peerDependencies).toHaveProperty('hono')
    expect(installed.dependencies).not.toHaveProperty('hono')
    expect(copiesOf(dir, 'hono')).toEqual([join(dir, 'node_modules', 'hono')])
  })

  it('type-checks the hosts (ours and the one docs/embedding.md shows) under strict with skipLibCheck: false', () => {
    expect(docsHost().trimEnd().split('\n').length).toBeLessThan(15)
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    try {
      execFileSync(process.execPath, [tsc, '-p', dir], { cwd: dir, stdio: 'pipe', timeout: 120_000 })
    } catch (err) {
      throw new Error(`tsc failed in the host:\n${(err as { stdout?: Buffer }).stdout?.toString()}`)
    }
    expect(existsSync(join(dir, 'build/host.js'))).toBe(true)
    expect(existsSync(join(dir, 'build/docs-host.js'))).toBe(true)
  }, 130_000)

  describe('runs on plain node: mounted under /panels-api, one tenant, scheduled syncs', () => {
    const data = () => join(dir, 'data')
    let host: Service | undefined
    let base = ''
    const start = async (syncIntervalSeconds: number) => {
      mkdirSync(data(), { recursive: true })
      host = startService(process.execPath, [join(dir, 'build/host.js')], {
        cwd: dir,
        env: {
          NODE_ENV: 'production',
          JWT_SECRET: SECRET,
          ENCRYPTION_KEY: 'library-host-encryption-key',
          DATABASE_URL: `file:${data()}/panels.db`,
          FILES_DIR: `${data()}/files`,
          SINGLE_TENANT_ID: TENANT,
          ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
          RATE_LIMIT_ENABLED: 'false',
          SYNC_INTERVAL_SECONDS: String(syncIntervalSeconds),
          LOG_LEVEL: 'warn',
        },
      })
      const port = await waitFor(30_000, `the host to listen (output: ${host.output()})`, () => {
        if (host!.proc.exitCode !== null) throw new Error(`the host exited: ${host!.output()}`)
        return /listening (\d+)/.exec(host!.output())?.[1]
      })
      base = `http://127.0.0.1:${port}`
    }
    const stop = async () => {
      const code = await host?.stop(10_000)
      expect(code, host?.output()).toBe(0)
      expect(host?.output()).toContain('closed')
      host = undefined
    }
    const call = async (path: string, init: RequestInit & { as?: string } = {}) => {
      const headers = await bearer(SECRET, init.as ?? TENANT, 'nurse')
      const res = await fetch(`${base}${path}`, { headers, ...init, signal: AbortSignal.timeout(15_000) })
      const text = await res.text()
      return { status: res.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text }
    }
    const runsOf = async (sourceId: number) =>
      (await call(`/panels-api/api/datasources/${sourceId}/sync-runs`)).body.syncRuns as { trigger: string; status: string }[]
    const state: { panelId?: number; sourceId?: number } = {}

    afterAll(async () => {
      await host?.stop(2_000)
    })

    it('serves its own routes beside the mounted service, with tokens signed by the package', async () => {
      await start(86_400)
      expect((await call('/')).body).toBe('host home')
      expect((await call('/panels-api/health')).status).toBe(200)
      const { token } = (await call('/login/nurse', { method: 'POST' })).body
      const res = await fetch(`${base}/panels-api/api/panels?tenantId=${TENANT}&userId=nurse`, {
        headers: { authorization: `Bearer ${token}` },
      })
      expect(res.status).toBe(200)
    }, 60_000)

    it('creates a panel and lists it through the mount', async () => {
      const body = JSON.stringify({ name: 'Ward 3', tenantId: TENANT, userId: 'nurse' })
      const created = await call('/panels-api/api/panels', { method: 'POST', body })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      state.panelId = created.body.id
      const listed = await call(`/panels-api/api/panels?tenantId=${TENANT}&userId=nurse`)
      expect(listed.body.map((p: { name: string }) => p.name)).toEqual(['Ward 3'])
    })

    it('refuses another tenant in single-tenant mode', async () => {
      const res = await call('/panels-api/api/panels?tenantId=clinic-8&userId=nurse', { as: 'clinic-8' })
      expect(res.status).toBe(403)
      expect(res.body.error).toBe('Access denied to tenant')
    })

    it('runs a due scheduled sync when the host calls runMaintenanceTick', async () => {
      const body = JSON.stringify({ type: 'api', config: { apiEndpoint: apiUrl, schedule: '* * * * * *' } })
      const created = await call(`/panels-api/api/panels/${state.panelId}/datasources`, { method: 'POST', body })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      state.sourceId = created.body.id
      const due = Date.parse(created.body.nextSyncAt)
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now()) + 50))
      const report = await call('/admin/maintenance-tick', { method: 'POST' })
      expect(report.body).toMatchObject({ started: 1, succeeded: 1, failed: 0 })
      const runs = await runsOf(state.sourceId!)
      expect(runs.map((r) => [r.trigger, r.status])).toEqual([
        ['schedule', 'success'],
        ['create', 'success'],
      ])
      expect(api.reads()).toBe(2)
    })

    it('stops on SIGTERM: close() stops the loop and closes the database', async () => {
      await stop()
    })

    it('runs due syncs from the scheduler loop, on the same database after a restart', async () => {
      await start(5)
      const runs = await waitFor(20_000, 'a sync by the scheduler loop', async () => {
        const list = await runsOf(state.sourceId!)
        // listed as soon as it starts: wait for it to end
        return list.length >= 3 && list[0].status !== 'syncing' ? list : undefined
      })
      expect(runs[0]).toMatchObject({ trigger: 'schedule', status: 'success' })
      expect(api.reads()).toBeGreaterThanOrEqual(3)
      const listed = await call(`/panels-api/api/panels?tenantId=${TENANT}&userId=nurse`)
      expect(listed.body.map((p: { name: string }) => p.name)).toEqual(['Ward 3'])
      await stop()
    }, 40_000)
  })
})
