import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type { D1Database } from '@cloudflare/workers-types/index.ts'
import { Miniflare, type MiniflareOptions } from 'miniflare'
import { createStorage } from 'unstorage'
import kvDriver from 'unstorage/drivers/cloudflare-kv-binding'
import { inject } from 'vitest'
import type { EnvRecord } from '../../../src/config.ts'
import { d1Db } from '../../../src/runtime/workers-d1.ts'
import { tomlList, tomlString } from '../wrangler-toml.ts'
import { type MirrorBucket, r2Mirror } from './r2-mirror.ts'
import { NULL_BODY, type RemoteServer, remoteEnv, type SqlClient, TABLES_SQL, wipeStatements } from './server.ts'

/** libSQL's `execute` over a D1 binding: what tests use to read and poke at stored rows. */
function d1Client(d1: D1Database): SqlClient {
  return {
    async execute(stmt) {
      const { sql, args = [] } = typeof stmt === 'string' ? { sql: stmt } : stmt
      const { results } = await d1
        .prepare(sql)
        .bind(...args)
        .all()
      return { rows: results as Record<string, unknown>[] }
    },
    close() {
      throw new Error('the D1 database belongs to workerd: a test that closes it cannot run on the workers target')
    },
  }
}

/**
 * The Workers bundle (built once per run by tests/helpers/remote/workers.setup.ts, exactly as
 * `wrangler deploy` bundles it) in workerd through Miniflare, with the bindings of wrangler.toml: a
 * local D1 migrated by `wrangler d1 migrations apply --local` (a copy of the run's migrated state,
 * one per test file), a local KV namespace and an in-memory R2 bucket as FILES.
 */
export async function startWorkers(secret: string): Promise<RemoteServer> {
  const { script, outdir, state } = inject('workersBundle')
  const dir = mkdtempSync(join(tmpdir(), 'workers-target-'))
  cpSync(state, join(dir, 'state'), { recursive: true })
  // Miniflare stops workerd itself when the process exits; the folder goes with it.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
  let output = ''
  const options = (env: EnvRecord): MiniflareOptions =>
    ({
      modules: true,
      modulesRoot: outdir,
      scriptPath: script,
      // The bundle's own workers.js is an ES module, as wrangler uploads it.
      modulesRules: [{ type: 'ESModule', include: ['**/*.js', '**/*.mjs'] }],
      compatibilityDate: tomlString('compatibility_date'),
      compatibilityFlags: tomlList('compatibility_flags'),
      d1Databases: { DB: tomlString('database_id')! },
      d1Persist: join(dir, 'state', 'v3', 'd1'),
      kvNamespaces: ['CACHE'],
      kvPersist: false,
      // The file storage of exports (wrangler.toml's FILES): an in-memory R2 bucket per instance.
      r2Buckets: ['FILES'],
      r2Persist: false,
      bindings: remoteEnv(secret, env),
      handleRuntimeStdio(stdout: Readable, stderr: Readable) {
        stdout.on('data', (d: Buffer) => {
          output += d
        })
        stderr.on('data', (d: Buffer) => {
          output += d
        })
      },
    }) as MiniflareOptions
  let served = JSON.stringify({})
  let mf = new Miniflare(options({}))
  await mf.ready
  // Proxies to the bindings of the current instance.
  const connect = async () => {
    const d1 = (await mf.getD1Database('DB')) as unknown as D1Database
    const kv = await mf.getKVNamespace('CACHE')
    return {
      d1,
      db: d1Db(d1),
      client: d1Client(d1),
      storage: createStorage({ driver: kvDriver({ binding: kv as never, base: 'panels' }) }),
    }
  }
  let bound = await connect()
  let mirror: ReturnType<typeof r2Mirror> | undefined

  return {
    runtime: 'workers',
    get db() {
      return bound.db
    },
    get client() {
      return bound.client
    },
    get storage() {
      return bound.storage
    },
    async reset(env, filesDir) {
      const wanted = JSON.stringify(env)
      // Rate-limit windows live in the isolate: a test app that limits starts a fresh one.
      if (wanted !== served || env.RATE_LIMIT_ENABLED === 'true') {
        // A new instance rather than setOptions: Miniflare's binding proxies fail after repeated
        // setOptions calls (an assertion in its synchronous fetcher).
        await mf.dispose()
        mf = new Miniflare(options(env))
        await mf.ready
        bound = await connect()
        served = wanted
      }
      const { d1, client, storage } = bound
      const tables = (await client.execute(TABLES_SQL)).rows.map((r) => String(r.name))
      const statements = await wipeStatements(async () => tables)
      await d1.batch([d1.prepare('PRAGMA defer_foreign_keys = on'), ...statements.map((s) => d1.prepare(s))])
      await storage.clear()
      output = ''
      // A test's files folder: the bucket holds what it holds, before each request and after.
      mirror = filesDir ? r2Mirror((await mf.getR2Bucket('FILES')) as unknown as MirrorBucket, filesDir) : undefined
      await mirror?.clear()
    },
    async dispatch(request) {
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
      await mirror?.toBucket()
      const res = await mf.dispatchFetch(request.url, {
        method: request.method,
        headers: [...request.headers],
        body,
        redirect: 'manual',
        signal: request.signal,
      } as never)
      // A server-sent event stream is handed on as it comes (it never ends by itself).
      if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
        return new Response(res.body as ReadableStream, { status: res.status, headers: [...res.headers] })
      }
      const bytes = NULL_BODY.has(res.status) ? null : await res.arrayBuffer()
      await mirror?.toFolder()
      if (res.status >= 500 && output) console.error(`workerd output:\n${output}`)
      return new Response(bytes, { status: res.status, statusText: res.statusText, headers: [...res.headers] })
    },
    // The cron trigger's own invocation (scheduled(), with its waitUntil work) in workerd: its
    // report is the line the bundle's handler logs.
    async tick(at) {
      const from = output.length
      const worker = await mf.getWorker()
      await worker.scheduled({ cron: tomlList('crons')[0] ?? '*/5 * * * *', scheduledTime: at })
      const line = output
        .slice(from)
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .findLast((l) => l.msg === 'scheduled syncs')
      if (!line) throw new Error(`the cron invocation logged no report:\n${output.slice(from)}`)
      const { level, time, msg, cron, ...report } = line
      return report
    },
    async close() {
      await mf.dispose()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
