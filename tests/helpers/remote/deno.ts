import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Client, createClient } from '@libsql/client'
import { createStorage } from 'unstorage'
import fsDriver from 'unstorage/drivers/fs'
import { inject } from 'vitest'
import type { EnvRecord } from '../../../src/config.ts'
import { createDb } from '../../../src/db/client.ts'
import { freePort, type Service, startService, waitForHealth } from '../../runtime/processes.ts'
import { NULL_BODY, type RemoteServer, remoteEnv, type SqlClient, TABLES_SQL, wipeStatements } from './server.ts'
import { TEST_CLOCK_HEADER } from './test-clock.mjs'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const ENTRY = 'src/runtime/deno.ts'

/** `deno task start` of deno.json with the test front (deno-front.ts) in place of the entry it runs. */
function startCommand() {
  const task: string = JSON.parse(readFileSync(join(ROOT, 'deno.json'), 'utf8')).tasks.start
  const [command, ...args] = task.split(/\s+/)
  if (args.at(-1) !== ENTRY) throw new Error(`deno.json's start task no longer runs ${ENTRY}: ${task}`)
  return { command: join(ROOT, command), args: [...args.slice(0, -1), 'tests/helpers/remote/deno-front.ts'] }
}

/**
 * src/runtime/deno.ts run as `deno task start` runs it (its flags, through the test clock's front) on a libSQL file in a temp folder, with
 * the fs cache driver in that folder, so the test process opens the same database file and cache.
 * Started once per test file; restarted only when a test app asks for another environment.
 */
export async function startDeno(secret: string): Promise<RemoteServer> {
  const dir = mkdtempSync(join(tmpdir(), 'deno-target-'))
  const data = join(dir, 'data')
  mkdirSync(join(data, 'files'), { recursive: true })
  const dbFile = join(data, 'panels.db')
  let service: Service | undefined
  let origin = ''
  let served: string | undefined
  process.once('exit', () => {
    service?.proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  const start = async (env: EnvRecord) => {
    await service?.stop(5_000)
    const port = await freePort()
    origin = `http://127.0.0.1:${port}`
    const { command, args } = startCommand()
    service = startService(command, args, {
      cwd: ROOT,
      env: {
        ...remoteEnv(secret, {
          DATABASE_URL: `file:${dbFile}`,
          FILES_DIR: join(data, 'files'),
          CACHE_DRIVER: 'fs',
          SYNC_SCHEDULER: 'false',
          ...env,
        }),
        PORT: String(port),
        HOME: dir,
        DENO_DIR: inject('denoDir'),
        NO_COLOR: '1',
      },
    })
    // vitest may end this worker without an exit event: the run's teardown stops what is listed here.
    writeFileSync(join(inject('denoDir'), 'servers', String(service.proc.pid)), '')
    await waitForHealth(service, origin, 120_000)
    served = JSON.stringify(env)
  }
  await start({})

  // The server created and migrated the file; this connection shares it (WAL, as the server set).
  const open = async () => {
    const connection = createClient({ url: `file:${dbFile}` })
    await connection.execute('PRAGMA busy_timeout = 5000')
    await connection.execute('PRAGMA foreign_keys = ON')
    return connection
  }
  let libsql = await open()
  const reopen = async () => {
    libsql.close()
    libsql = await open()
  }
  // A test reading a query plan runs its EXPLAIN on a connection of its own, closed after: libsql
  // leaves a finished EXPLAIN in progress on its connection, which then keeps the read snapshot it
  // took and no longer sees what the server writes after (tursodatabase/libsql-js#232). Read on the
  // shared connection, every later statement of the test process would see the database of then.
  const explainOnItsOwn = async (stmt: unknown) => {
    const connection = createClient({ url: `file:${dbFile}` })
    try {
      return await connection.execute(stmt as never)
    } finally {
      connection.close()
    }
  }
  const run = (stmt: unknown) => (isExplain(stmt) ? explainOnItsOwn(stmt) : libsql.execute(stmt as never))
  // The connection of the moment, for drizzle (a retry may have replaced it); its statements and
  // batches are tried again while the server's writes make them SQLITE_BUSY, as `execute` below.
  const current = new Proxy({} as Client, {
    get(_, key) {
      if (key === 'execute') {
        return (stmt: unknown, args?: unknown) => whileBusy(() => run(args === undefined ? stmt : { sql: stmt, args }), reopen)
      }
      if (key === 'batch') return (...args: Parameters<Client['batch']>) => whileBusy(() => libsql.batch(...args), reopen)
      const value = Reflect.get(libsql, key)
      return typeof value === 'function' ? value.bind(libsql) : value
    },
  })
  const client: SqlClient = {
    // A write of the test may meet the server's own (an access record written as a request ends):
    // SQLITE_BUSY_SNAPSHOT is not waited out by busy_timeout, so the statement is tried again, on a fresh
    // connection: one that SQLITE_BUSY stopped half-way can keep a statement in progress and its snapshot.
    execute: (stmt) => whileBusy(async () => (await run(stmt)) as never, reopen),
    close() {
      throw new Error('the database belongs to the Deno server: a test that closes it cannot run on the deno target')
    },
  }
  const storage = createStorage({ driver: fsDriver({ base: join(data, 'cache') }) })

  return {
    runtime: 'deno',
    db: createDb(current),
    client,
    storage,
    async reset(testEnv, filesDir) {
      // A test's files folder is the server's FILES_DIR: it runs on this machine.
      const env = filesDir ? { ...testEnv, FILES_DIR: filesDir } : testEnv
      // Rate-limit windows live in the process: a test app that limits starts a fresh one.
      if (JSON.stringify(env) !== served || env.RATE_LIMIT_ENABLED === 'true') await start(env)
      // The wipe has a connection of its own: a statement of the shared one that SQLITE_BUSY stopped half-way
      // can stay in progress, and no COMMIT on that connection succeeds until it is finalized.
      const wipe = createClient({ url: `file:${dbFile}` })
      try {
        await wipe.execute('PRAGMA busy_timeout = 5000')
        const tables = (await wipe.execute(TABLES_SQL)).rows.map((r) => String(r.name))
        const statements = await wipeStatements(async () => tables)
        // The server may still be writing (work a previous test started in the background): retry a while.
        await whileBusy(() => wipe.batch(['PRAGMA defer_foreign_keys = on', ...statements], 'write'))
      } finally {
        wipe.close()
      }
      await storage.clear()
    },
    async dispatch(request) {
      const url = new URL(request.url)
      const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
      const res = await fetch(`${origin}${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        body,
        redirect: 'manual',
        signal: request.signal,
      })
      if (res.status >= 500) console.error(`deno output:\n${service?.output()}`)
      // A server-sent event stream is handed on as it comes (it never ends by itself).
      if (res.headers.get('content-type')?.startsWith('text/event-stream')) return res
      return NULL_BODY.has(res.status) ? res : new Response(await res.arrayBuffer(), res)
    },
    // The tick in the Deno process (deno-front.ts), at the test clock's instant.
    async tick(at) {
      const res = await fetch(`${origin}/__test/maintenance-tick`, {
        method: 'POST',
        headers: { [TEST_CLOCK_HEADER]: at.toISOString() },
      })
      if (!res.ok) throw new Error(`the Deno server's tick answered ${res.status}:\n${service?.output()}`)
      return (await res.json()) as Record<string, unknown>
    },
    async close() {
      libsql.close()
      await service?.stop(5_000)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Whether a statement (text or `{ sql, args }`) is an EXPLAIN or EXPLAIN QUERY PLAN. */
const isExplain = (stmt: unknown) =>
  /^\s*EXPLAIN\b/i.test(typeof stmt === 'string' ? stmt : String((stmt as { sql?: unknown } | null)?.sql ?? ''))

/** Runs `work`, again every 250 ms (at most 20 times, after `beforeRetry`) while the database answers SQLITE_BUSY. */
async function whileBusy<T>(work: () => Promise<T>, beforeRetry?: () => Promise<void>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (err) {
      if (attempt >= 20 || !String(err).includes('SQLITE_BUSY')) throw err
      await new Promise((r) => setTimeout(r, 250))
      await beforeRetry?.()
    }
  }
}
