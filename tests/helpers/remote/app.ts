import { Hono } from 'hono'
import type { App } from '../../../src/app.ts'
import { parseConfig } from '../../../src/config.ts'
import { buildDeps } from '../../../src/deps.ts'
import { createLogger } from '../../../src/lib/logger.ts'
import { sha256Hex } from '../../../src/runtime/node-crypto.ts'
import { type MaintenanceReport, runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { type TestAppOptions, testClock } from '../app.ts'
import { TARGET } from '../target.ts'
import { type RemoteServer, remoteEnv } from './server.ts'
import { TEST_CLOCK_HEADER } from './test-clock.mjs'

let server: Promise<RemoteServer> | undefined

/**
 * The server of this vitest worker for the current target, started on first use and kept for every
 * test file the worker runs (the projects run with `isolate: false`); it stops when the worker exits.
 */
function serverFor(secret: string): Promise<RemoteServer> {
  server ??= (async () => {
    if (TARGET === 'workers') return (await import('./workers.ts')).startWorkers(secret)
    if (TARGET === 'deno') return (await import('./deno.ts')).startDeno(secret)
    throw new Error(`no remote server for the ${TARGET} target`)
  })()
  return server
}

/** What a remote target cannot take from a test, each a reason to skip with onTarget. */
function refuse(options: TestAppOptions) {
  const unsupported = [
    options.fetch && 'an injected fetch (the server makes its own requests)',
    options.storage && 'a cache storage of the test (the server has its own)',
    options.client && 'a database client of the test',
  ].filter(Boolean)
  if (unsupported.length > 0) {
    throw new Error(
      `makeTestApp on the ${TARGET} target cannot use ${unsupported.join(', ')}: skip this test there with onTarget(…, reason)`,
    )
  }
}

/** The server's log lines stay in its process. */
const uncapturedLogs = new Proxy([] as Record<string, unknown>[], {
  get() {
    throw new Error(`t.logs: the ${TARGET} server's logs are not captured; skip this test there with onTarget(…, reason)`)
  },
})

/**
 * makeTestApp for a remote target: the same shape, with `app.request()` answered by the server over
 * loopback HTTP, on an emptied database and cache, and `deps`/`client` reaching that same database
 * and cache from the test process.
 */
export async function remoteTestApp(secret: string, options: TestAppOptions) {
  refuse(options)
  const remote = await serverFor(secret)
  await remote.reset(options.env ?? {}, options.filesDir)
  const clock = options.clock ?? testClock()
  const config = parseConfig(remoteEnv(secret, { ...options.env, LOG_LEVEL: 'silent' }))
  const deps = await buildDeps(config, {
    db: remote.db,
    storage: remote.storage,
    runtime: remote.runtime,
    sha256Hex,
    log: createLogger('silent'),
    clock,
  })
  // Hono's own `request()` turns a path into http://localhost/…; the catch-all hands that request to
  // the server as it is, with the test clock's instant (test-clock.mjs). Only request()/fetch() are
  // served: routes added here never reach the server.
  const forward = new Hono()
  forward.all('*', (c) => {
    const request = new Request(c.req.raw)
    request.headers.set(TEST_CLOCK_HEADER, clock.now().toISOString())
    return remote.dispatch(request)
  })
  return {
    app: forward as unknown as App,
    deps,
    client: remote.client,
    clock,
    tick: async () =>
      ((await remote.tick?.(clock.now())) as MaintenanceReport | undefined) ?? runMaintenanceTick(deps, clock.now()),
    logs: uncapturedLogs,
  }
}
