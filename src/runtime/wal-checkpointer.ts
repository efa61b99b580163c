import { Worker } from 'node:worker_threads'
import { libsqlModulePath } from './libsql-statements.ts'

/**
 * WAL checkpoints off the event loop (docs/performance.md "Claims"). The local libSQL client runs
 * every statement synchronously on the event loop's thread, so SQLite's automatic checkpoint —
 * run by the commit that crosses `wal_autocheckpoint`, copying the WAL's pages into the database
 * file and syncing it — held the loop for as long as the disk took: 10–130 ms on a busy machine, once
 * every fraction of a second under a write load, and every request waiting meanwhile waited with it.
 * Here a worker thread with a connection of its own checkpoints instead (PASSIVE: it never waits for
 * readers or writers, nor makes them wait), often enough to keep the WAL short; the service's own
 * connections then checkpoint only past `FALLBACK_PAGES`, should the worker fall behind or stop.
 *
 * Several processes on one database file each run one: a checkpoint another is running makes this
 * one return at once (SQLITE_BUSY), and the next round goes on.
 *
 * Under a steady stream of commits a passive round never catches up with the last ones, so the WAL
 * does not start again from its beginning until the service's connection checkpoints at
 * `FALLBACK_PAGES` (copying only what the worker has not); the file then stays at that size.
 */

/** Pages the WAL may grow to before a commit checkpoints by itself (as before this worker: the safety net). */
export const FALLBACK_PAGES = 40_000

/** How often the worker checkpoints while there is something to copy, and while the WAL stays idle. */
const BUSY_INTERVAL_MS = 100
const IDLE_INTERVAL_MS = 1000

export interface Checkpointer {
  /** Rounds run so far, and those that found new pages in the WAL (for tests and diagnostics). */
  stats(): Promise<{ rounds: number; copying: number }>
  /** Ends the worker after its current round, closing its connection. */
  stop(): Promise<void>
}

/**
 * Starts the checkpointing worker for the database file at `path` (a WAL database). Undefined when
 * no worker can run here (the libsql module not found, worker threads unavailable): the caller then
 * keeps SQLite's automatic checkpoints.
 */
export async function startCheckpointer(path: string): Promise<Checkpointer | undefined> {
  // Node only: Deno's worker threads are left out (it keeps SQLite's automatic checkpoints).
  if ('Deno' in globalThis) return undefined
  const libsql = libsqlModulePath()
  if (!libsql) return undefined
  let worker: Worker
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { libsql, path, busy: BUSY_INTERVAL_MS, idle: IDLE_INTERVAL_MS },
    })
  } catch {
    return undefined
  }
  // Ready once its connection is open; a worker that fails to open one is not kept.
  const ready = await new Promise<boolean>((resolve) => {
    const late = setTimeout(() => resolve(false), 10_000)
    const done = (ok: boolean) => {
      clearTimeout(late)
      resolve(ok)
    }
    worker.once('message', (m: { ready?: boolean }) => done(m?.ready === true))
    worker.once('error', () => done(false))
    worker.once('exit', () => done(false))
  })
  if (!ready) {
    await worker.terminate()
    return undefined
  }
  worker.on('error', () => {})
  let pending: ((s: { rounds: number; copying: number }) => void)[] = []
  worker.on('message', (m: { stats?: { rounds: number; copying: number } }) => {
    if (!m?.stats) return
    const waiting = pending
    pending = []
    for (const resolve of waiting) resolve(m.stats)
  })
  // The process may exit without stopping it (the worker holds no work that must finish). After the
  // listeners: adding a 'message' listener refs the worker's port again, and a process that never
  // called stop() (a host that opened the database itself) would then never exit.
  worker.unref()
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
  return {
    stats: () =>
      new Promise((resolve) => {
        pending.push(resolve)
        worker.postMessage('stats')
      }),
    async stop() {
      // Held (ref) until it is gone: the process must not end while the worker closes its connection.
      worker.ref()
      worker.postMessage('stop')
      let timer: ReturnType<typeof setTimeout> | undefined
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), 5000)
      })
      if ((await Promise.race([exited, late])) === 'late') await worker.terminate()
      clearTimeout(timer)
    },
  }
}

/**
 * The worker (CommonJS, evaluated: no file of its own to bundle). It opens the database with the
 * same libsql module the client uses and checkpoints in rounds: again soon while the WAL grows,
 * less often while it is idle.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.libsql)
let db
try {
  db = new Database(workerData.path, {})
} catch (err) {
  parentPort.postMessage({ ready: false, error: String(err) })
  process.exit(1)
}
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)')
checkpoint.raw(true)
let rounds = 0
let copying = 0
let last = -1
let timer
let stopped = false
function round() {
  let next = workerData.busy
  try {
    // [busy, frames in the WAL, frames checkpointed]; busy: another connection is checkpointing.
    const [busy, frames] = checkpoint.all()[0].map(Number)
    rounds++
    // The WAL grew (or started again) since the last round: commits are coming, come back soon.
    if (!busy && frames !== last) copying++
    else if (!busy) next = workerData.idle
    last = frames
  } catch {
    // Locked: the next round tries again.
  }
  if (!stopped) timer = setTimeout(round, next)
}
parentPort.on('message', (m) => {
  if (m === 'stats') parentPort.postMessage({ stats: { rounds, copying } })
  if (m === 'stop') {
    stopped = true
    clearTimeout(timer)
    db.close()
    parentPort.close()
  }
})
parentPort.postMessage({ ready: true })
timer = setTimeout(round, workerData.busy)
`
