/**
 * The Cloudflare Workers entry (`wrangler deploy`, `npm run build:worker`). Deps are built per
 * request from the Worker's env (an I/O object made in one request cannot serve another): the
 * D1 binding `DB` through drizzle-orm/d1, else libSQL over HTTP on DATABASE_URL; the KV binding
 * `CACHE` through unstorage; the R2 binding `FILES` as the file store of `file` sources and uploads
 * (without it, file features refuse with a 400 naming the binding). The cron trigger runs the due syncs. Workers never migrate at run time:
 * `wrangler d1 migrations apply` applies migrations/ in the deploy step. A request that commits a
 * tenant's events sends that tenant's due webhook deliveries after its response (waitUntil).
 */
import type {
  D1Database,
  ExecutionContext,
  Fetcher,
  KVNamespace,
  R2Bucket,
  ScheduledController,
} from '@cloudflare/workers-types/index.ts'
import { createClient } from '@libsql/client/web'
import { createStorage, type Storage } from 'unstorage'
import kvDriver from 'unstorage/drivers/cloudflare-kv-binding'
import memoryDriver from 'unstorage/drivers/memory'
import { createApp } from '../app.ts'
import { type Config, ConfigError, parseConfig } from '../config.ts'
import { createDb } from '../db/client.ts'
import { buildDeps, type Deps } from '../deps.ts'
import type { DocsAssets } from '../lib/docs-asset-files.ts'
import { createLogger } from '../lib/logger.ts'
import { createRateLimiter } from '../lib/rate-limit.ts'
import { createTokenVerifier } from '../lib/token-verifier.ts'
import { deliverAfterCommits } from '../modules/subscriptions/subscriptions.kick.ts'
import { runMaintenanceTick } from '../scheduler/maintenance-tick.ts'
import { sha256Hex } from './node-crypto.ts'
import { d1Db } from './workers-d1.ts'
import { r2FileStore } from './workers-files.ts'
import { type TrackedInvocation, trackInvocation } from './workers-invocation.ts'

/** The Worker's env: the bindings of wrangler.toml plus string vars and secrets. */
export interface WorkerEnv {
  DB?: D1Database
  CACHE?: KVNamespace
  FILES?: R2Bucket
  /** The static assets of wrangler.toml `[assets]`: Swagger UI's files for /docs. */
  ASSETS?: Fetcher
  [name: string]: unknown
}

/** What one isolate keeps between requests: plain memory, no I/O objects. */
interface Isolate {
  config: Config & { jwtSecret: string; encryptionKey: string }
  shared: Pick<Deps, 'tokens' | 'rateLimiter' | 'startedAt'>
  /** The cache when no KV namespace is bound: per isolate, like Node's memory cache per process. */
  memory: Storage
}

const isolates = new WeakMap<object, Isolate>()

/** The fetch invocation of an execution context (the scheduled one has none: its step delivers itself). */
const invocations = new WeakMap<object, TrackedInvocation>()

/** node:crypto's synchronous digest, which nodejs_compat provides. */

/** What Workers need beyond parseConfig's rules, named per variable like parseConfig's issues. */
function workersIssues(env: WorkerEnv, vars: Record<string, string>, cacheDriver: string) {
  const issues: { variable: string; message: string }[] = []
  if (!env.DB && !/^(libsql|https?):/.test(vars.DATABASE_URL ?? '')) {
    issues.push({ variable: 'DATABASE_URL', message: 'Workers need the D1 binding DB or a libsql://… or https://… URL' })
  }
  if (!vars.JWT_SECRET) issues.push({ variable: 'JWT_SECRET', message: 'required on Workers (wrangler secret put JWT_SECRET)' })
  if (!vars.ENCRYPTION_KEY) issues.push({ variable: 'ENCRYPTION_KEY', message: 'required on Workers (wrangler secret put)' })
  if (cacheDriver === 'kv' && !env.CACHE) issues.push({ variable: 'CACHE_DRIVER', message: 'kv needs the KV binding CACHE' })
  if (cacheDriver === 'redis' || cacheDriver === 'fs') {
    issues.push({ variable: 'CACHE_DRIVER', message: `${cacheDriver} is not available on Workers; bind a KV namespace as CACHE` })
  }
  return issues
}

/** Parses the env once per isolate; one ConfigError names every bad variable, Workers rules included. */
function isolateOf(env: WorkerEnv): Isolate {
  const known = isolates.get(env)
  if (known) return known
  const vars = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string' && v !== '')) as Record<
    string,
    string
  >
  const cacheDriver = vars.CACHE_DRIVER ?? (env.CACHE ? 'kv' : 'memory')
  const issues = workersIssues(env, vars, cacheDriver)
  let config: Config
  try {
    // A resumable read (a bulk export) hands its run to the next cron tick after this long: workerd
    // keeps `waitUntil` work about 30 s after a response (docs/connectors-fhir.md "On Workers").
    config = parseConfig({ SYNC_INVOCATION_SECONDS: '25', ...vars, CACHE_DRIVER: cacheDriver })
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    const named = new Set(err.issues.map((i) => i.variable))
    throw new ConfigError([...err.issues, ...issues.filter((i) => !named.has(i.variable))])
  }
  if (issues.length > 0) throw new ConfigError(issues)
  const now = Date.now
  const isolate: Isolate = {
    config: config as Isolate['config'],
    shared: { tokens: createTokenVerifier(config.jwtSecret!, now), rateLimiter: createRateLimiter(now), startedAt: now() },
    memory: createStorage({ driver: memoryDriver() }),
  }
  isolates.set(env, isolate)
  return isolate
}

/** Swagger UI's files from the static-assets binding (copied there by `npm run build:worker`). */
function assetsOf(env: WorkerEnv): DocsAssets | undefined {
  const assets = env.ASSETS
  if (!assets) return undefined
  return async (name) => {
    const res = await assets.fetch(`https://assets.invalid/${name}`)
    if (res.ok && res.body) return res.body as unknown as ReadableStream
    await res.body?.cancel()
    return null
  }
}

/**
 * The request's deps: fresh database and cache clients, the isolate's token cache and rate limits,
 * and `defer` kept alive by the invocation's `waitUntil` (workerd drops work left after the response).
 * A fetch invocation's commits are followed by a delivery pass per tenant (subscriptions.kick.ts).
 */
async function depsFor(env: WorkerEnv, execution: Pick<ExecutionContext, 'waitUntil'>): Promise<Deps> {
  let isolate: Isolate
  try {
    isolate = isolateOf(env)
  } catch (err) {
    if (err instanceof ConfigError) console.error(err.message)
    throw err
  }
  const { config } = isolate
  const db = env.DB ? d1Db(env.DB) : createDb(createClient({ url: config.databaseUrl, authToken: config.databaseAuthToken }))
  const storage =
    config.cacheDriver === 'kv'
      ? createStorage({ driver: kvDriver({ binding: env.CACHE as never, base: 'panels' }) })
      : isolate.memory
  const log = createLogger(config.logLevel)
  // workerd's fetch must be called on the global object, not as a method of `deps.outbound`.
  const outboundFetch: typeof fetch = (input, init) => fetch(input, init)
  const files = env.FILES ? r2FileStore(env.FILES) : undefined
  const invocation = invocations.get(execution)
  const waitUntil = invocation ? invocation.defer : (work: Promise<unknown>) => execution.waitUntil(work)
  const deps = await buildDeps(config, {
    db,
    storage,
    files,
    runtime: 'workers',
    sha256Hex,
    fetch: outboundFetch,
    log,
    docsAssets: assetsOf(env),
    waitUntil,
    // workerd's HTTP server does not watch a connection while a response streams: it finds the
    // client gone (and cancels the body) only when a write to it fails.
    streamCloseSeenOnWrite: true,
    // Deps are this invocation's: a tick's resumed exports share its SYNC_INVOCATION_SECONDS.
    invocationStartedAt: performance.now(),
  })
  const shared = { ...deps, ...isolate.shared }
  if (invocation) deliverAfterCommits(shared, invocation)
  return shared
}

const app = createApp((env, request) => depsFor(env as WorkerEnv, request.executionCtx))

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext) {
    const invocation = trackInvocation(ctx)
    invocations.set(ctx, invocation)
    let response: Response
    try {
      response = await app.fetch(request, env, ctx as never)
    } finally {
      invocation.answered()
    }
    // A request answered without reading its body (a refused upload, a 401 on a POST): read the rest
    // after answering. Behind the static-assets router (wrangler.toml [assets]) workerd otherwise
    // resets the connection while the client is still sending, and the client never sees the answer.
    if (request.body && !request.bodyUsed) ctx.waitUntil(request.body.pipeTo(new WritableStream()).catch(() => {}))
    return response
  },

  /** The cron trigger of wrangler.toml: runs the due syncs, kept alive by waitUntil. */
  scheduled(controller: ScheduledController, env: WorkerEnv, ctx: ExecutionContext) {
    ctx.waitUntil(
      depsFor(env, ctx).then(async (deps) => {
        const report = await runMaintenanceTick(deps, new Date(controller.scheduledTime))
        deps.log.info('scheduled syncs', { cron: controller.cron, ...report })
      }),
    )
  },
}
