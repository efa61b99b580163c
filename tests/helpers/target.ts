/**
 * Which runtime serves the app under test: `PANEL_TEST_TARGET` = `node` (default: the app
 * in-process), `workers` (the Workers bundle in workerd through Miniflare, local D1 and KV) or
 * `deno` (`deno task start` on a libSQL file). `makeTestApp()` reads it; tests that cannot apply to a
 * runtime say so with `onTarget`, e.g.
 *
 *   it.skipIf(onTarget('workers', 'needs a file system'))('…', …)
 *
 * Every reason passed to `onTarget` must appear in docs/runtimes.md ("Tests per runtime"); a test
 * of the node project checks that.
 */
export const TARGETS = ['node', 'workers', 'deno'] as const
export type Target = (typeof TARGETS)[number]

function targetOf(value: string | undefined): Target {
  if (value === undefined || value === '') return 'node'
  if ((TARGETS as readonly string[]).includes(value)) return value as Target
  throw new Error(`PANEL_TEST_TARGET=${value}: expected one of ${TARGETS.join(', ')}`)
}

export const TARGET: Target = targetOf(process.env.PANEL_TEST_TARGET)

/** True when the app under test is served by another process (workerd or Deno), not in-process. */
export const REMOTE = TARGET !== 'node'

/**
 * Every reason a test of the API suite does not run on a target. docs/runtimes.md lists each one
 * (tests/helpers/target.test.ts checks it), so the list stays short and visible.
 */
export const SKIP = {
  noSqlite:
    'reads a SQLite file as a database source, which Workers cannot (no driver: the sync fails naming the runtime, tested in tests/connectors/database.sync.test.ts)',
  serverFiles:
    "drives a `$viewdefinition-export` job from the test process, which does not reach the server's file storage (its files and the job's own polls are tested on every target)",
  bareNode: 'builds an in-process app without a files folder (the Workers refusal is tested in tests/runtime/workers.test.ts)',
  logs: "reads the app's captured log lines, which stay in the server process",
  inProcess:
    "changes the in-process app or its primitives (adds a route, injects a cache, closes the database, spies on WebCrypto), or reads a module's state there (the FHIRPath engine's loading)",
  cacheDriver: 'expects the in-process memory cache driver in /health; the servers report their own (kv, fs)',
  clientIp: "the servers record every request's client IP in change metadata (CF-Connecting-IP on workerd, the socket on Deno)",
  cfIp: 'on Workers the client IP is CF-Connecting-IP (Miniflare sends loopback), so X-Forwarded-For does not set it',
  earlyAnswer: "Miniflare's loopback resets the connection when the worker answers before reading a large body",
  freshConnections:
    "drives the service's libSQL client with a fresh connection per statement (the remote libSQL protocol's worst case); workerd's D1 and the Deno server keep their own connections",
  workersXlsx: 'xlsx needs exceljs, which the Workers bundle leaves out (400 naming the runtime)',
  workersPdf: 'PDF export needs pdfkit, which the Workers bundle leaves out (400 naming the runtime)',
  feedState: "reads the in-process change feed's state (its open streams) and stops the in-process deps",
  sameProcess:
    "reads a response stream in the process that serves it; the servers' responses reach the test over a socket and are read whole",
} as const

/** The skips taken in this test file: target and reason (for reporting). */
export const skipsTaken: { target: Target; reason: string }[] = []

/**
 * True when the current target is one of `targets`, recording `reason`. The reason says what the
 * test needs that the target lacks (or what another developer's open fix is), so skip lists stay
 * honest: use it only in `skipIf` / `runIf` conditions.
 */
export function onTarget(targets: Target | Target[], reason: string): boolean {
  const list = Array.isArray(targets) ? targets : [targets]
  if (!reason.trim()) throw new Error('onTarget needs a reason')
  const hit = list.includes(TARGET)
  if (hit) skipsTaken.push({ target: TARGET, reason })
  return hit
}
