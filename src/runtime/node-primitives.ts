import { lookup } from 'node:dns/promises'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createClient } from '@libsql/client'
import { createStorage, type Storage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import type { Config } from '../config.ts'
import { createDb } from '../db/client.ts'
import type { Primitives } from '../deps.ts'
import { createLogger, type Logger } from '../lib/logger.ts'
import { cacheLibsqlStatements } from './libsql-statements.ts'
import { applyMigrations } from './migrate.ts'
import { sha256Hex } from './node-crypto.ts'
import { nodeDocsAssets } from './node-docs-assets.ts'
import { nodeFileStore } from './node-files.ts'
import { nodeSqliteOpener } from './node-sqlite.ts'
import { createRedisBus } from './redis-bus.ts'
import { type Checkpointer, FALLBACK_PAGES, startCheckpointer } from './wal-checkpointer.ts'

/**
 * Opens the libSQL database of DATABASE_URL (creating a file's folder), tuned and migrated.
 *
 * No behaviour depends on connection state (docs/runtimes.md "Connection state"): a remote URL
 * may answer every request on a stream of its own, so nothing is set per connection there. A file
 * gets one connection (`concurrency: 1`; the native client runs every statement synchronously on
 * this thread, so a pool adds no parallelism, only connections without the tuning below) and the
 * busy timeout as a client option, which every connection the client opens carries.
 */
export async function openDatabase(config: Config) {
  const url = config.databaseUrl
  const file = url.startsWith('file:')
  if (file) {
    mkdirSync(dirname(url.slice('file:'.length)), { recursive: true })
    // Each connection keeps its prepared statements (libsql-statements.ts).
    cacheLibsqlStatements()
  }
  let checkpointer: Checkpointer | undefined
  const client = createClient({
    url,
    authToken: config.databaseAuthToken,
    ...(file ? { concurrency: 1, timeout: BUSY_TIMEOUT_MS } : {}),
  })
  if (file) {
    // WAL + synchronous=NORMAL: durable across process crashes, ~30× faster commits (PERFORMANCE-NOTES).
    await client.execute('PRAGMA journal_mode = WAL')
    await client.execute('PRAGMA synchronous = NORMAL')
    // WAL checkpoints run on a worker thread (wal-checkpointer.ts), not in the commit that crosses
    // `wal_autocheckpoint` on the event loop; the service's connections checkpoint only past
    // FALLBACK_PAGES, should the worker fall behind. Without a worker: every ~16 MiB, as before.
    checkpointer = await startCheckpointer(databasePath(url))
    await client.execute(`PRAGMA wal_autocheckpoint = ${checkpointer ? FALLBACK_PAGES : 4000}`)
    // 8 MiB page cache (default 2 MiB): record keys are hashes, so a sync inserts into the key index
    // at random places and keeping its upper levels cached pays; more costs memory for little gain.
    await client.execute('PRAGMA cache_size = -8192')
    // Large sorts and temporary B-trees (a view of a million rows evaluated in its order) spill to
    // a temporary file past the page cache instead of growing in memory: this libSQL build keeps
    // them in memory by default, ~110 MiB of a million-row view's evaluation (docs/performance.md).
    await client.execute('PRAGMA temp_store = FILE')
    // A safety net, not relied on (the native build has it on already): services delete
    // dependants themselves and guard dependants' inserts, so remote streams behave alike.
    await client.execute('PRAGMA foreign_keys = ON')
  }
  const db = createDb(client)
  await applyMigrations(db)
  return { db, client, checkpointer }
}

/** The file of a `file:` URL (its query, if any, left out). */
const databasePath = (url: string) => url.slice('file:'.length).split('?')[0]

/** How long a write waits for another process's lock on a database file before it fails. */
const BUSY_TIMEOUT_MS = 5000

/** The cache driver of CACHE_DRIVER / REDIS_URL. */
export async function openStorage(config: Config): Promise<Storage> {
  if (config.cacheDriver === 'redis') {
    const { default: redisDriver } = await import('unstorage/drivers/redis')
    return createStorage({ driver: redisDriver({ url: config.redisUrl, base: 'panels' }) })
  }
  if (config.cacheDriver === 'fs') {
    const { default: fsDriver } = await import('unstorage/drivers/fs')
    return createStorage({ driver: fsDriver({ base: join(dirname(config.filesDir), 'cache') }) })
  }
  return createStorage({ driver: memoryDriver() })
}

export const resolveHost = async (hostname: string) => (await lookup(hostname, { all: true })).map((a) => a.address)

/** All primitives a Node process needs for `buildDeps`. */
export async function nodePrimitives(config: Config, log?: Logger): Promise<Primitives> {
  const { db, client, checkpointer } = await openDatabase(config)
  return {
    // With Redis (the scale-out deployment) commits wake the streams of every instance (docs/live.md).
    live: config.redisUrl ? createRedisBus(config.redisUrl, log ?? createLogger(config.logLevel)) : undefined,
    db,
    storage: await openStorage(config),
    resolveHost,
    files: nodeFileStore(config.filesDir),
    openSqlite: nodeSqliteOpener(config.filesDir),
    runtime: 'node',
    docsAssets: nodeDocsAssets(),
    sha256Hex,
    closeDb: async () => {
      await checkpointer?.stop()
      client.close()
    },
  }
}

/**
 * Development only: a JWT secret and an encryption key generated once and kept beside the
 * database (`data/.dev-secrets.json`), so printed tokens and encrypted configs survive restarts.
 */
export function withDevSecrets(config: Config, file = './data/.dev-secrets.json'): Config {
  if (config.env === 'production' || (config.jwtSecret && config.encryptionKey)) return config
  let stored: { jwtSecret?: string; encryptionKey?: string } = {}
  try {
    stored = JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    // first start: generated below
  }
  const random = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  const next = { jwtSecret: stored.jwtSecret ?? random(), encryptionKey: stored.encryptionKey ?? random() }
  if (next.jwtSecret !== stored.jwtSecret || next.encryptionKey !== stored.encryptionKey) {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, JSON.stringify(next), { mode: 0o600 })
  }
  return { ...config, jwtSecret: config.jwtSecret ?? next.jwtSecret, encryptionKey: config.encryptionKey ?? next.encryptionKey }
}

/**
 * The log writer of the Node entry: lines are collected and written to stdout together, when 512
 * are waiting or 100 ms after the first of them, and on exit. stdout to a file or a pipe is a
 * synchronous write on Linux: written once per event-loop turn (nearly once per request under load)
 * the access log cost ~6 µs more per GET than in batches (~80 → ~74 µs CPU; docs/performance.md).
 * A process killed outright (SIGKILL, out of memory) loses at most the last 100 ms of lines.
 */
export function bufferedStdout(maxLines = 512, maxDelayMs = 100): (line: string) => void {
  let lines: string[] = []
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    if (lines.length === 0) return
    const out = `${lines.join('\n')}\n`
    lines = []
    process.stdout.write(out)
  }
  process.on('exit', flush)
  return (line) => {
    lines.push(line)
    if (lines.length >= maxLines) flush()
    else if (timer === undefined) timer = setTimeout(flush, maxDelayMs).unref()
  }
}
