import type { Storage } from 'unstorage'
import type { EnvRecord } from '../../../src/config.ts'
import type { Db } from '../../../src/db/client.ts'

/** What tests need of a raw SQL connection to the database under test (libSQL's `execute` shape). */
export interface SqlClient {
  execute(stmt: string | { sql: string; args?: unknown[] }): Promise<{ rows: Record<string, unknown>[] }>
  close(): void
}

/**
 * A runtime serving the app in another process (workerd, Deno), started once per test file and
 * reset for every `makeTestApp()`. The test process reaches the same database and cache the server
 * uses, so tests can seed through services and inspect what was stored.
 */
export interface RemoteServer {
  readonly runtime: 'workers' | 'deno'
  /**
   * Empties the database (every table, sqlite_sequence included) and the cache, and makes the server
   * run with `env` on top of the test environment (restarting it only when that changes), its file
   * storage being the test's `filesDir` when given (the Deno server's FILES_DIR; the worker's R2
   * bucket mirrored to and from it, r2-mirror.ts).
   */
  reset(env: EnvRecord, filesDir?: string): Promise<void>
  /** Sends a request to the server as it was addressed (`http://localhost/api/…`) and returns its response. */
  dispatch(request: Request): Promise<Response>
  /**
   * Runs the maintenance tick (src/scheduler/maintenance-tick.ts) at `at` as the runtime's own
   * scheduler runs it, and answers its report; undefined where the test process runs it instead.
   */
  tick?(at: Date): Promise<Record<string, unknown>>
  /** drizzle over the server's database, from the test process. */
  readonly db: Db
  readonly client: SqlClient
  /** The server's cache storage (unstorage), from the test process. */
  readonly storage: Storage
  close(): Promise<void>
}

/** The environment every test server gets, as makeTestApp's in-process config (minus the database). */
export const remoteEnv = (secret: string, env: EnvRecord): Record<string, string> => {
  const merged: Record<string, string | undefined> = {
    NODE_ENV: 'test',
    JWT_SECRET: secret,
    ENCRYPTION_KEY: 'test-encryption-key',
    ALLOW_PRIVATE_NETWORK_SOURCES: 'true',
    LOG_LEVEL: 'warn',
    ...env,
  }
  return Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined)) as Record<string, string>
}

/** Statements that empty every table of the schema and reset AUTOINCREMENT counters. */
export async function wipeStatements(tables: () => Promise<string[]>) {
  const names = await tables()
  return [
    ...names.map((name) => `DELETE FROM "${name}"`),
    `DELETE FROM sqlite_sequence WHERE name NOT IN ('d1_migrations', '__drizzle_migrations')`,
  ]
}

/** The tables a wipe empties: the schema's own, not SQLite's, D1's or the migrators' bookkeeping. */
export const TABLES_SQL =
  "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' " +
  "AND name NOT IN ('d1_migrations', '__drizzle_migrations')"

/** Statuses whose responses carry no body. */
export const NULL_BODY = new Set([101, 103, 204, 205, 304])
