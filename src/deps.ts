import type { Storage } from 'unstorage'
import { type Cache, createCache } from './cache/cache.ts'
import type { Config } from './config.ts'
import type { Db } from './db/client.ts'
import type { DocsAssets } from './http/docs-assets.ts'
import { createRateLimiter, type RateLimiter } from './http/rate-limit.ts'
import { createTokenVerifier, type TokenVerifier } from './http/token-verifier.ts'
import { type Clock, systemClock } from './lib/clock.ts'
import type { FileStore } from './lib/files.ts'
import { createLogger, type Logger } from './lib/logger.ts'
import { createSecretBox, type SecretBox } from './lib/secrets.ts'
import type { OpenSqlite } from './lib/sql.ts'

/** What a runtime resolves a host name with, for the private-address guard of outbound requests. */
export type ResolveHost = (hostname: string) => Promise<string[]>

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
  tokens: TokenVerifier
  rateLimiter: RateLimiter
  startedAt: number
  /** Closes what the deps own (database client, cache driver). */
  close(): Promise<void>
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
  closeDb?: () => void | Promise<void>
}

/** One way to assemble Deps for every runtime entry and for tests. */
export async function buildDeps(config: Config, p: Primitives): Promise<Deps> {
  if (!config.jwtSecret) throw new Error('JWT_SECRET must be resolved before building deps')
  if (!config.encryptionKey) throw new Error('ENCRYPTION_KEY must be resolved before building deps')
  const clock = p.clock ?? systemClock
  const now = () => clock.now().getTime()
  const cache = createCache(p.storage, { defaultTtl: config.cacheTtlSeconds, now })
  return {
    db: p.db,
    cache,
    config: config as Config & { jwtSecret: string },
    clock,
    log: p.log ?? createLogger(config.logLevel),
    outbound: { fetch: p.fetch ?? fetch, resolveHost: p.resolveHost },
    secrets: await createSecretBox(config.encryptionKey),
    files: p.files,
    openSqlite: p.openSqlite,
    runtime: p.runtime ?? 'node',
    docsAssets: p.docsAssets,
    sha256Hex: p.sha256Hex,
    tokens: createTokenVerifier(config.jwtSecret, now),
    rateLimiter: createRateLimiter(now),
    startedAt: now(),
    async close() {
      await cache.dispose()
      await p.closeDb?.()
    },
  }
}
