import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type FixtureServer, sendJson, startJsonServer } from '../helpers/servers.ts'
import { freePort, type Service, SMOKE_SECRET, serverEnv, startService, waitForHealth } from './processes.ts'
import { bearer } from './smoke.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

// SIGTERM while a background job runs (docs/operations.md, Graceful shutdown): the Node entry waits
// for it within SHUTDOWN_TIMEOUT_SECONDS, or hands it back as the crash path would, then exits 0.
describe('Node: SIGTERM during background work', () => {
  let fixture: FixtureServer
  /** How long /data takes to answer from its second request on (the first is the creation sync). */
  let delayMs = 0
  let served = 0
  const dirs: string[] = []
  const services: Service[] = []

  beforeAll(async () => {
    fixture = await startJsonServer((_req, res) => {
      const wait = served++ === 0 ? 0 : delayMs
      setTimeout(() => !res.destroyed && sendJson(res, 200, [{ id: 1, name: 'Ada' }]), wait)
    })
  })
  afterAll(async () => {
    for (const s of services) await s.stop(2_000)
    await fixture.close()
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  /** Starts the server, creates an api source and starts its async sync; answers what to check. */
  async function asyncSyncThenSigterm(shutdownSeconds: number) {
    served = 0
    const dir = mkdtempSync(join(tmpdir(), 'node-bg-'))
    dirs.push(dir)
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const env = serverEnv(join(dir, 'data'), port, SMOKE_SECRET)
    const service = startService(
      process.execPath,
      ['--import', `${ROOT}node_modules/tsx/dist/loader.mjs`, `${ROOT}src/runtime/node.ts`],
      {
        cwd: dir,
        env: {
          ...env,
          ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
          SHUTDOWN_TIMEOUT_SECONDS: String(shutdownSeconds),
          TSX_TSCONFIG_PATH: `${ROOT}tsconfig.json`,
        },
      },
    )
    services.push(service)
    await waitForHealth(service, base)
    const headers = await bearer(SMOKE_SECRET, 'bg', 'alice')
    const who = { tenantId: 'bg', userId: 'alice' }
    const post = async (path: string, body: unknown) =>
      fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
    const panel = await (await post('/api/panels', { name: 'Background', ...who })).json()
    const source = await (
      await post(`/api/panels/${panel.id}/datasources`, {
        name: 'API',
        type: 'api',
        config: { apiEndpoint: `${fixture.url}/data` },
        ...who,
      })
    ).json()
    const started = await post(`/api/datasources/${source.id}/sync?async=true&tenantId=bg`, {})
    expect(started.status).toBe(202)
    const run = await started.json()
    const signalledAt = Date.now()
    service.proc.kill('SIGTERM')
    const code = await service.exited
    const tookMs = Date.now() - signalledAt
    const db = createClient({ url: `file:${join(dir, 'data', 'panels.db')}` })
    try {
      const [stored] = (await db.execute({ sql: 'SELECT status, error FROM sync_runs WHERE id = ?', args: [run.id] })).rows
      return { code, tookMs, run: stored, output: service.output() }
    } finally {
      db.close()
    }
  }

  it('waits for an async sync to finish before it exits', async () => {
    delayMs = 1_500
    const { code, tookMs, run, output } = await asyncSyncThenSigterm(20)
    expect(code, output).toBe(0)
    expect(run).toMatchObject({ status: 'success' })
    expect(tookMs).toBeGreaterThanOrEqual(1_000)
    expect(output).toContain('"msg":"background work settled","finished":1,"handedBack":0,"abandoned":0')
  }, 60_000)

  it('hands back a sync still running at SHUTDOWN_TIMEOUT_SECONDS, ended as interrupted like after a crash', async () => {
    delayMs = 60_000
    const { code, tookMs, run, output } = await asyncSyncThenSigterm(2)
    expect(code, output).toBe(0)
    expect(tookMs).toBeLessThan(4_000)
    expect(run.status).toBe('error')
    expect(String(run.error)).toMatch(/interrupted.*will run again/)
    expect(output).toContain('"msg":"sync handed back"')
  }, 60_000)
})
