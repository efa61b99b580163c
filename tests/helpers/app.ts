import type { Client } from '@libsql/client'
import { createStorage, type Storage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { type App, createApp } from '../../src/app.ts'
import { type EnvRecord, parseConfig } from '../../src/config.ts'
import type { ServiceContext } from '../../src/context.ts'
import { createDb } from '../../src/db/client.ts'
import { buildDeps, type Deps } from '../../src/deps.ts'
import { createLogger } from '../../src/lib/logger.ts'
import { applyMigrations } from '../../src/runtime/migrate.ts'
import { sha256Hex } from '../../src/runtime/node-crypto.ts'
import { nodeDocsAssets } from '../../src/runtime/node-docs-assets.ts'
import { nodeFileStore } from '../../src/runtime/node-files.ts'
import { nodeSqliteOpener } from '../../src/runtime/node-sqlite.ts'
import { type MaintenanceReport, runMaintenanceTick } from '../../src/scheduler/maintenance-tick.ts'
import { remoteTestApp } from './remote/app.ts'
import type { SqlClient } from './remote/server.ts'
import { REMOTE } from './target.ts'
import { migratedDatabaseSql, type TestDatabase, testDatabaseClient } from './test-database.ts'

export const TEST_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789'

/** A clock tests can move; starts at a fixed instant. */
export function testClock(start = '2026-01-01T12:00:00.000Z') {
  let t = new Date(start).getTime()
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms
    },
    set(iso: string) {
      t = new Date(iso).getTime()
    },
  }
}

export type TestClock = ReturnType<typeof testClock>

export interface TestAppOptions {
  env?: EnvRecord
  storage?: Storage
  fetch?: typeof fetch
  clock?: ReturnType<typeof testClock>
  /** FILES_DIR for file sources and uploads (a temp folder of the test); none by default. */
  filesDir?: string
  /** The database client: `PANEL_TEST_DB` by default (testDatabaseClient). */
  database?: TestDatabase
  /** A database client of the test (e.g. on a file another app also opens); `database` is then ignored. */
  client?: Client
}

/** The app under test, what it was built from, and ways into its database, clock and logs. */
export interface TestApp {
  app: App
  deps: Deps
  /** Raw SQL on the app's database. */
  client: SqlClient
  clock: TestClock
  /** The app's log lines, parsed. */
  logs: Record<string, unknown>[]
  /**
   * The maintenance tick at the clock's instant, where the runtime runs it: in this process, or
   * the cron trigger's invocation in workerd (remote/workers.ts).
   */
  tick(): Promise<MaintenanceReport>
}

/**
 * The real app on a fresh in-memory libSQL database with the real migrations (replayed from one
 * migrated database per test process: migratedDatabaseSql), a memory cache and a movable clock
 * (`log` collects lines instead of printing them).
 *
 * With PANEL_TEST_TARGET=workers|deno (tests/helpers/target.ts) the app is served by that runtime
 * instead (tests/helpers/remote/): same shape, an emptied database and cache per call.
 */
export async function makeTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  if (REMOTE) return remoteTestApp(TEST_SECRET, options)
  const config = parseConfig({
    NODE_ENV: 'test',
    JWT_SECRET: TEST_SECRET,
    ENCRYPTION_KEY: 'test-encryption-key',
    DATABASE_URL: ':memory:',
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
    LOG_LEVEL: 'info',
    ...options.env,
  })
  const client = options.client ?? (await testDatabaseClient(options.database))
  // A database of our own starts as the migrated one (made once per test process); a client the
  // test passes in may hold a database already. The migrations then run as the app's entries run
  // them: on the copy they find every migration recorded.
  if (!options.client) await client.executeMultiple(await migratedDatabaseSql())
  const db = createDb(client)
  await applyMigrations(db)
  const clock = options.clock ?? testClock()
  const logs: Record<string, unknown>[] = []
  const log = createLogger(config.logLevel, (line) => logs.push(JSON.parse(line)))
  const deps: Deps = await buildDeps(config, {
    db,
    storage: options.storage ?? createStorage({ driver: memoryDriver() }),
    clock,
    log,
    fetch: options.fetch,
    files: options.filesDir ? nodeFileStore(options.filesDir) : undefined,
    openSqlite: nodeSqliteOpener(options.filesDir),
    docsAssets: nodeDocsAssets(),
    sha256Hex,
    closeDb: () => client.close(),
  })
  const app = createApp(() => deps)
  return { app, deps, client: client as SqlClient, clock, logs, tick: () => runMaintenanceTick(deps, clock.now()) }
}

/** A service context for seeding through services (not HTTP, not raw SQL). */
export function serviceCtx(deps: Deps, tenantId: string, userId: string, isAdmin = false): ServiceContext {
  return { ...deps, scope: { tenantId, userId, isAdmin, groups: [] }, meta: { requestId: 'test', source: 'system' } }
}
