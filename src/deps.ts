import type { Storage } from 'unstorage'
import { type Cache, createCache } from './cache/cache.ts'
import type { Config } from './config.ts'
import type { Db } from './db/client.ts'
import { type BackgroundJob, type Defer, trackBackgroundWork } from './lib/background.ts'
import { type Clock, systemClock } from './lib/clock.ts'
import type { DocsAssets } from './lib/docs-asset-files.ts'
import type { ResolveHost } from './lib/egress/guarded-fetch.ts'
import type { FileStore } from './lib/files.ts'
import { createLogger, type Logger } from './lib/logger.ts'
import { createRateLimiter, type RateLimiter } from './lib/rate-limit.ts'
import { createSecretBox, type SecretBox } from './lib/secrets.ts'
import type { OpenSqlite } from './lib/sql.ts'
import { createTokenVerifier, type TokenVerifier } from './lib/token-verifier.ts'
import { createLocalBus, type LiveBus } from './live/bus.ts'

/** What a runtime resolves a host name with, for the private-address guard of outbound requests. */
export type { ResolveHost }

/** Everything services need; built once per process (Node, Deno) or per request (Workers). */
export interface Deps {
  db: Db
  cache: Cache
  config: Config & { jwtSecret: string }
  clock: Clock
  log: Logger
  /** Raw outbound fetch and resolver; connectors only use them through the guarded fetch. */
  outbound: { fetch: typeof fetch; resolveHost?: ResolveHost }
  secrets: SecretBox
  /** FILES_DIR; undefined on a runtime without a file system (Workers). */
  files?: FileStore
  /** Opens SQLite/libSQL databases for `database` sources; undefined where the runtime has none. */
  openSqlite?: OpenSqlite
  /** The runtime's name, for messages about what it lacks ('node', 'deno', 'workers'). */
  runtime: string
  /** Swagger UI's script and stylesheet for `/docs`; without them the page's assets are 404s. */
  docsAssets?: DocsAssets
  /**
   * Synchronous SHA-256 (hex) where the runtime has one (node:crypto on Node, Deno and Workers with
   * nodejs_compat); record keys fall back to WebCrypto when absent. Same digest either way.
   */
  sha256Hex?: (text: string) => string
  /** Wakes change-feed streams after a commit of events (src/live/bus.ts). */
  live: LiveBus
  /**
   * When this invocation began (`performance.now()`), where deps are built per invocation
   * (Workers): SYNC_INVOCATION_SECONDS then counts from it for every run of the invocation (a
   * tick's several resumed exports share one budget). Undefined where deps outlive invocations
   * (Node, Deno): each run counts from its own start.
   */
  invocationStartedAt?: number
  /**
   * The runtime learns that a client closed a streamed response only when a write to it fails
   * (workerd), not when the connection closes (Node, Deno): event streams then write a probe at
   * every poll of the log, so they end, and write their access records, soon after the client left.
   */
  streamCloseSeenOnWrite: boolean
  tokens: TokenVerifier
  rateLimiter: RateLimiter
  startedAt: number
  /**
   * The one seam for work that outlives its request (async syncs, recomputes, scheduler steps):
   * `waitUntil` on Workers; tracked on Node and Deno, and finished or handed back by `close()`.
   */
  defer: Defer
  /**
   * Aborted when `close()` runs out of waiting time (Node, Deno): long work then stops at its next
   * safe point and leaves the rest for the next run, as after a crash. Undefined on Workers.
   */
  stopping?: AbortSignal
  /**
   * Waits for deferred work until shortly before `until` (epoch ms; default: SHUTDOWN_TIMEOUT_SECONDS
   * from now), then aborts `stopping` and gives what is left the rest of the time to hand back.
   */
  settle(options?: { until?: number }): Promise<void>
  /** `settle`, then closes what the deps own (database client, cache driver). */
  close(options?: { until?: number }): Promise<void>
}

export interface Primitives {
  db: Db
  storage: Storage
  clock?: Clock
  log?: Logger
  fetch?: typeof fetch
  resolveHost?: ResolveHost
  files?: FileStore
  openSqlite?: OpenSqlite
  runtime?: string
  docsAssets?: DocsAssets
  sha256Hex?: (text: string) => string
  /** The runtime's own way to keep work alive after the response (Workers: `ctx.waitUntil`). */
  waitUntil?: (work: Promise<unknown>) => void
  closeDb?: () => void | Promise<void>
  /** The change feed's wake-ups; one process's own bus when absent. */
  live?: LiveBus
  /** Deps.streamCloseSeenOnWrite; false when absent. */
  streamCloseSeenOnWrite?: boolean
  /** Deps.invocationStartedAt (Workers). */
  invocationStartedAt?: number
}

/** One way to assemble Deps for every runtime entry and for tests. */
export async function buildDeps(config: Config, p: Primitives): Promise<Deps> {
  if (!config.jwtSecret) throw new Error('JWT_SECRET must be resolved before building deps')
  if (!config.encryptionKey) throw new Error('ENCRYPTION_KEY must be resolved before building deps')
  const clock = p.clock ?? systemClock
  const now = () => clock.now().getTime()
  const cache = createCache(p.storage, { defaultTtl: config.cacheTtlSeconds, now })
  const log = p.log ?? createLogger(config.logLevel)
  const live = p.live ?? createLocalBus()
  const waitUntil = p.waitUntil
  const background = waitUntil ? undefined : trackBackgroundWork(log)
  async function settle({ until = Date.now() + config.shutdownTimeoutMs } = {}) {
    // A stop ends the event streams first: they would hold their connections (and their access
    // records, deferred work) until the deadline; clients resume elsewhere with Last-Event-ID.
    await live.close()
    if (!background || background.pending() === 0) return
    // Most of the time to finish; the last fifth (at most 2 s) for what is left to hand back.
    const left = Math.max(0, until - Date.now())
    const graceMs = Math.min(2_000, Math.floor(left / 5))
    log.info('background work settled', { ...(await background.settle({ waitMs: left - graceMs, graceMs })) })
  }
  const defer: Defer = waitUntil
    ? (work: Promise<unknown>, job: BackgroundJob) =>
        waitUntil(work.catch((err) => log.error('background work failed', { ...job, error: (err as Error)?.message })))
    : background!.defer
  return {
    db: p.db,
    cache,
    config: config as Config & { jwtSecret: string },
    clock,
    log,
    outbound: { fetch: p.fetch ?? fetch, resolveHost: p.resolveHost },
    secrets: await createSecretBox(config.encryptionKey),
    files: p.files,
    openSqlite: p.openSqlite,
    runtime: p.runtime ?? 'node',
    docsAssets: p.docsAssets,
    sha256Hex: p.sha256Hex,
    live,
    streamCloseSeenOnWrite: p.streamCloseSeenOnWrite ?? false,
    invocationStartedAt: p.invocationStartedAt,
    tokens: createTokenVerifier(config.jwtSecret, now),
    rateLimiter: createRateLimiter(now),
    startedAt: now(),
    defer,
    stopping: background?.stopping,
    settle,
    async close(options = {}) {
      await settle(options)
      await cache.dispose()
      await live.close()
      await p.closeDb?.()
    },
  }
}
