import { mkdtempSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, type Service, SMOKE_SECRET, serverEnv, startService, waitForHealth } from './processes.ts'
import { bearer } from './smoke.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLIENTS = 10
const PER_CLIENT = 60

/** What one request ended as. */
type Outcome =
  | { kind: 'answered'; status: number; connection: string | undefined; name: string; afterSignal: boolean }
  | { kind: 'refused'; name: string }
  | { kind: 'error'; code: string; name: string }

const envOf = (dir: string, port: number) => ({
  ...serverEnv(join(dir, 'data'), port, SMOKE_SECRET),
  LOG_LEVEL: 'warn',
  SHUTDOWN_TIMEOUT_SECONDS: '20',
})

const RUNTIMES: [string, (dir: string, port: number) => Service][] = [
  [
    'Node (tsx src/runtime/node.ts)',
    (dir, port) =>
      startService(process.execPath, ['--import', `${ROOT}node_modules/tsx/dist/loader.mjs`, `${ROOT}src/runtime/node.ts`], {
        cwd: dir,
        env: { ...envOf(dir, port), TSX_TSCONFIG_PATH: `${ROOT}tsconfig.json` },
      }),
  ],
  [
    'Deno (deno task start)',
    (dir, port) =>
      startService(`${ROOT}node_modules/.bin/deno`, ['task', 'start'], {
        cwd: ROOT,
        env: { ...envOf(dir, port), HOME: dir, NO_COLOR: '1' },
      }),
  ],
]

/** POST one panel over the client's keep-alive agent; never rejects. */
function postPanel(port: number, agent: Agent, headers: Record<string, string>, name: string, signalled: () => boolean) {
  const body = JSON.stringify({ name, tenantId: 'restart', userId: 'alice' })
  return new Promise<Outcome>((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/api/panels',
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        timeout: 30_000,
      },
      (res) => {
        res.resume()
        res.on('end', () =>
          resolve({
            kind: 'answered',
            status: res.statusCode ?? 0,
            connection: res.headers.connection,
            name,
            afterSignal: signalled(),
          }),
        )
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ kind: 'error', code: err.code ?? err.message, name }))
      },
    )
    req.on('timeout', () => req.destroy(Object.assign(new Error('no answer in 30 s'), { code: 'TIMEOUT' })))
    req.on('error', (err: NodeJS.ErrnoException) =>
      // Refused: the connection was never made, so nothing was written (the instance is gone).
      resolve(err.code === 'ECONNREFUSED' ? { kind: 'refused', name } : { kind: 'error', code: err.code ?? err.message, name }),
    )
    req.end(body)
  })
}

// A rolling restart under load (docs/operations.md, Graceful shutdown): ten keep-alive clients
// write panels in a loop, the server gets SIGTERM mid-way; every request it read is answered and
// applied (2xx) or refused cleanly (503, Connection: close); no connection is reset.
describe.each(RUNTIMES)('%s: SIGTERM under concurrent keep-alive load', (_name, startServer) => {
  const dir = mkdtempSync(join(tmpdir(), 'restart-'))
  const services: Service[] = []
  afterAll(async () => {
    for (const s of services) await s.stop(2_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it('answers every request it read, resets no connection, and applies exactly the 2xx ones', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const first = startServer(dir, port)
    services.push(first)
    await waitForHealth(first, base, 120_000)
    const headers = await bearer(SMOKE_SECRET, 'restart', 'alice')

    let signalledAt = 0
    const signalled = () => signalledAt > 0
    let answered = 0
    const outcomes: Outcome[] = []
    const client = async (c: number) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      try {
        for (let i = 0; i < PER_CLIENT; i++) {
          const outcome = await postPanel(port, agent, headers, `c${c}-${i}`, signalled)
          outcomes.push(outcome)
          if (outcome.kind !== 'answered' || outcome.status === 503) return
          answered++
          if (answered === CLIENTS * 10 && !signalledAt) {
            signalledAt = Date.now()
            first.proc.kill('SIGTERM')
          }
        }
      } finally {
        agent.destroy()
      }
    }
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))
    expect(await first.exited, first.output()).toBe(0)
    expect(signalledAt).toBeGreaterThan(0)

    const errors = outcomes.filter((o) => o.kind === 'error')
    expect(errors, first.output()).toEqual([])
    const responses = outcomes.filter((o) => o.kind === 'answered')
    for (const r of responses) {
      if (r.status === 503) expect(r.connection).toBe('close')
      else expect(r.status).toBe(201)
    }
    const count = (f: (o: Outcome) => boolean) => outcomes.filter(f).length
    console.info('rolling restart:', {
      requests: outcomes.length,
      applied: count((o) => o.kind === 'answered' && o.status === 201),
      appliedAfterSignal: count((o) => o.kind === 'answered' && o.status === 201 && o.afterSignal),
      refused503: count((o) => o.kind === 'answered' && o.status === 503),
      refusedConnect: count((o) => o.kind === 'refused'),
      errors: errors.length,
    })
    // The window this is about: requests sent on open connections after the signal were answered.
    expect(responses.filter((r) => r.afterSignal).length).toBeGreaterThan(0)

    // Restarted on the same database: exactly the panels answered 201 exist.
    const second = startServer(dir, port)
    services.push(second)
    await waitForHealth(second, base, 120_000)
    const listed = (await (await fetch(`${base}/api/panels?tenantId=restart&userId=alice`, { headers })).json()) as
      | { name: string }[]
      | { panels: { name: string }[] }
    const names = (Array.isArray(listed) ? listed : listed.panels).map((p) => p.name).sort()
    const applied = responses
      .filter((r) => r.status === 201)
      .map((r) => r.name)
      .sort()
    expect(names).toEqual(applied)
  }, 300_000)
})
