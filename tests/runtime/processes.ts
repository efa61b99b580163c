import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { smokeSuite } from './smoke.ts'

/** A port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Polls `check` every 100 ms until it returns a value, for at most `ms`. */
export async function waitFor<T>(ms: number, what: string, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

export interface Service {
  proc: ChildProcess
  output: () => string
  exited: Promise<number | null>
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when killed). */
  stop(graceMs?: number): Promise<number | null>
}

/** Starts a service process with only `env` (plus PATH/HOME), collecting stdout and stderr together. */
export function startService(command: string, args: string[], options: { cwd: string; env: Record<string, string> }): Service {
  let out = ''
  const proc = spawn(command, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH, HOME: options.cwd, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  proc.stdout!.on('data', (d) => {
    out += d
  })
  proc.stderr!.on('data', (d) => {
    out += d
  })
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  const running = () => proc.exitCode === null && proc.signalCode === null
  return {
    proc,
    output: () => out,
    exited,
    async stop(graceMs = 10_000) {
      if (!running()) return proc.exitCode
      proc.kill('SIGTERM')
      const timer = setTimeout(() => running() && proc.kill('SIGKILL'), graceMs)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
}

/** Waits until `GET <base>/health` answers 200, failing early when the process exits. */
export async function waitForHealth(service: Service, base: string, ms = 60_000) {
  await waitFor(ms, `${base}/health (output so far: ${service.output()})`, async () => {
    if (service.proc.exitCode !== null) throw new Error(`the service exited (${service.proc.exitCode}): ${service.output()}`)
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) })
      return res.status === 200 ? true : undefined
    } catch {
      return undefined
    }
  })
}

/** The environment every runtime test gives a server: production rules, its own data folder. */
export function serverEnv(dataDir: string, port: number, secret: string): Record<string, string> {
  return {
    NODE_ENV: 'production',
    PORT: String(port),
    DATABASE_URL: `file:${dataDir}/panels.db`,
    FILES_DIR: `${dataDir}/files`,
    JWT_SECRET: secret,
    ENCRYPTION_KEY: 'runtime-smoke-encryption-key',
    RATE_LIMIT_ENABLED: 'false',
    SYNC_SCHEDULER: 'false',
    LOG_LEVEL: 'info',
  }
}

export const SMOKE_SECRET = 'runtime-smoke-secret-that-is-long-enough-0123456789'

/**
 * Registers, in the caller's `describe`: start the server (`start` gets a temp data folder and a
 * free port), the smoke suite against it, and a graceful stop on SIGTERM (exit 0, "stopped" logged).
 * The process is killed and the folder removed afterwards whatever happened.
 */
export function servedRuntime(start: (dataDir: string, port: number, env: Record<string, string>) => Service, startMs = 60_000) {
  let dir = ''
  let base = ''
  let service: Service | undefined
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'runtime-'))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    service = start(dir, port, serverEnv(join(dir, 'data'), port, SMOKE_SECRET))
    await waitForHealth(service, base, startMs)
  }, startMs + 10_000)
  afterAll(async () => {
    await service?.stop(2_000)
    rmSync(dir, { recursive: true, force: true })
  })

  smokeSuite(() => ({ base, secret: SMOKE_SECRET }))

  it('stops gracefully on SIGTERM: exit code 0 after logging "stopped"', async () => {
    const code = await service!.stop()
    expect(code, service!.output()).toBe(0)
    expect(service!.output()).toContain('"msg":"stopped"')
  })
}

const CHECKOUT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The Node entry run from source (src/runtime/node.ts through tsx's loader) in `dir`, on `port`,
 * with the smoke secret and `extra` environment: one instance of the service for the tests that
 * start several on one database.
 */
export function startNodeFromSource(dir: string, port: number, extra: Record<string, string>): Service {
  return startService(
    process.execPath,
    ['--import', `${CHECKOUT}node_modules/tsx/dist/loader.mjs`, `${CHECKOUT}src/runtime/node.ts`],
    {
      cwd: dir,
      env: {
        ...serverEnv(join(dir, 'data'), port, SMOKE_SECRET),
        TSX_TSCONFIG_PATH: `${CHECKOUT}tsconfig.json`,
        LOG_LEVEL: 'warn',
        ...extra,
      },
    },
  )
}
