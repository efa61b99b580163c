import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { eq } from 'drizzle-orm'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../src/app.ts'
import { parseConfig } from '../../../src/config.ts'
import { createDb } from '../../../src/db/client.ts'
import { dataSources } from '../../../src/db/schema.ts'
import { buildDeps } from '../../../src/deps.ts'
import { createLogger } from '../../../src/lib/logger.ts'
import { applyMigrations } from '../../../src/runtime/migrate.ts'
import { TEST_SECRET } from '../../helpers/app.ts'
import { clientFor } from '../../helpers/http.ts'
import { type ApiFixture, createPanel, createSource, startApiFixture, waitFor } from './fixtures.ts'

let api: ApiFixture
let dir: string
beforeAll(async () => {
  api = await startApiFixture()
  dir = mkdtempSync(join(tmpdir(), 'shutdown-'))
})
afterAll(async () => {
  api.state.release?.()
  await api.server.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The app on a libSQL file (so its state can be read after `deps.close()`), with the real clock. */
async function startApp(name: string) {
  const url = `file:${join(dir, `${name}.db`)}`
  const config = parseConfig({
    NODE_ENV: 'test',
    JWT_SECRET: TEST_SECRET,
    ENCRYPTION_KEY: 'test-encryption-key',
    DATABASE_URL: url,
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
    LOG_LEVEL: 'silent',
  })
  const client = createClient({ url })
  const db = createDb(client)
  await applyMigrations(db)
  const deps = await buildDeps(config, {
    db,
    storage: createStorage({ driver: memoryDriver() }),
    log: createLogger(process.env.DEBUG_SHUTDOWN ? 'debug' : 'silent'),
    closeDb: () => client.close(),
  })
  const alice = clientFor(
    createApp(() => deps),
    'tenant-a',
    'alice',
  )
  const panel = await createPanel(alice)
  /** Reads the database again after the deps closed it, as the next start would. */
  const reopen = async (sql: string, args: (string | number)[]) => {
    const again = createClient({ url })
    try {
      return (await again.execute({ sql, args })).rows
    } finally {
      again.close()
    }
  }
  return { deps, alice, panelId: panel.id, reopen }
}

describe('deps.close(): background work at a graceful stop', () => {
  it('waits for an async sync to finish before closing the database', async () => {
    const { deps, alice, panelId, reopen } = await startApp('finish')
    const { body: source } = await createSource(alice, panelId, { apiEndpoint: `${api.server.url}/slow?ms=400`, keyField: 'id' })
    const started = await alice.post(`/api/datasources/${source.id}/sync?async=true`)
    expect(started.status).toBe(202)

    await deps.close({ until: Date.now() + 10_000 })

    const [run] = await reopen('SELECT status, rows_written FROM sync_runs WHERE id = ?', [started.body.id])
    expect(run).toMatchObject({ status: 'success', rows_written: 3 })
    const [src] = await reopen('SELECT sync_status, lease_run_id FROM data_sources WHERE id = ?', [source.id])
    expect(src).toMatchObject({ sync_status: 'success', lease_run_id: null })
  })

  it('hands back a sync still running at the deadline: ended as interrupted and due again, as after a crash', async () => {
    const { deps, alice, panelId, reopen } = await startApp('hand-back')
    // Created on /patients (creation syncs at once), then pointed at /held, which answers on release().
    const { body: source } = await createSource(alice, panelId, { apiEndpoint: `${api.server.url}/patients`, keyField: 'id' })
    await deps.db
      .update(dataSources)
      .set({ config: { apiEndpoint: `${api.server.url}/held`, keyField: 'id' } })
      .where(eq(dataSources.id, source.id))
    api.state.release = undefined
    const started = await alice.post(`/api/datasources/${source.id}/sync?async=true`)
    expect(started.status).toBe(202)
    const release = await waitFor(async () => api.state.release)

    const before = Date.now()
    await deps.close({ until: before + 1_000 })
    const took = Date.now() - before
    expect(took).toBeLessThan(1_500)
    release()

    const [run] = await reopen('SELECT status, error FROM sync_runs WHERE id = ?', [started.body.id])
    expect(run.status).toBe('error')
    expect(String(run.error)).toMatch(/interrupted.*will run again/)
    const [src] = await reopen('SELECT sync_status, error_message, lease_run_id, next_sync_at FROM data_sources WHERE id = ?', [
      source.id,
    ])
    expect(src).toMatchObject({ sync_status: 'error', lease_run_id: null })
    expect(String(src.error_message)).toMatch(/interrupted/)
    expect(Date.parse(String(src.next_sync_at))).toBeLessThanOrEqual(Date.now())
  })
})
