import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

// The real Node entry as a child process, run from a temp dir so nothing is written into the repo.
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const ENTRY = join(ROOT, 'src/runtime/node.ts')
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs')
const SECRETS = { JWT_SECRET: 'p'.repeat(40), ENCRYPTION_KEY: 'entry-test-encryption-key' }

interface Child {
  proc: ChildProcess
  stdout: () => string
  stderr: () => string
  exited: Promise<number | null>
}

let dir: string
let children: ChildProcess[] = []

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'node-entry-'))
})

afterEach(() => {
  for (const proc of children) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
  children = []
  rmSync(dir, { recursive: true, force: true })
})

/** A port free on 127.0.0.1 right now (PORT must be 1..65535, so 0 is not an option). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** Starts the entry with only `env` (plus PATH/HOME): nothing leaks in from the test runner. */
function startEntry(env: Record<string, string>): Child {
  let out = ''
  let err = ''
  const proc = spawn(process.execPath, ['--import', TSX, ENTRY], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: dir, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(proc)
  proc.stdout!.on('data', (d) => {
    out += d
  })
  proc.stderr!.on('data', (d) => {
    err += d
  })
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  return { proc, stdout: () => out, stderr: () => err, exited }
}

async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Polls `check` every 50 ms until it returns a value, for at most `ms`. */
async function waitFor<T>(ms: number, what: string, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const value = await check()
    if (value !== undefined) return value
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`)
}

/** Waits until the entry printed its development token and returns it. */
async function startedToken(child: Child): Promise<string> {
  return waitFor(20_000, `the development token (stdout: ${child.stdout()} stderr: ${child.stderr()})`, () => {
    if (child.proc.exitCode !== null) throw new Error(`entry exited early (${child.proc.exitCode}): ${child.stderr()}`)
    return /^\s+(eyJ[\w-]+\.[\w-]+\.[\w-]+)\s*$/m.exec(child.stdout())?.[1]
  })
}

/** Whether a new TCP connection to the port is accepted or refused. */
function tryConnect(port: number): Promise<'accepted' | 'refused'> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve('accepted')
    })
    socket.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNREFUSED' ? resolve('refused') : reject(err)))
  })
}

function devEnv(port: number) {
  return {
    NODE_ENV: 'development',
    PORT: String(port),
    DATABASE_URL: `file:${join(dir, 'db', 'p.db')}`,
    FILES_DIR: join(dir, 'files'),
    LOG_LEVEL: 'info',
  }
}

describe('node src/runtime/node.ts: configuration errors', () => {
  it('exits non-zero naming every bad variable', async () => {
    const child = startEntry({ NODE_ENV: 'production', PORT: 'abc' })
    const code = await within(20_000, 'the entry to exit', child.exited)
    expect(code).not.toBe(0)
    expect(child.stderr()).toContain('Invalid configuration')
    for (const variable of ['PORT', 'JWT_SECRET', 'ENCRYPTION_KEY']) expect(child.stderr()).toContain(`${variable}:`)
    expect(existsSync(join(dir, 'data'))).toBe(false)
  })

  it('refuses AUTH_DISABLED=true in production, even with valid secrets', async () => {
    const port = await freePort()
    const child = startEntry({ ...devEnv(port), ...SECRETS, NODE_ENV: 'production', AUTH_DISABLED: 'true' })
    const code = await within(20_000, 'the entry to exit', child.exited)
    expect(code).not.toBe(0)
    expect(child.stderr()).toContain('AUTH_DISABLED:')
    expect(existsSync(join(dir, 'db', 'p.db'))).toBe(false)
    expect(await tryConnect(port)).toBe('refused')
  })
})

describe('node src/runtime/node.ts: development start-up', () => {
  it('prints the docs URL and a token that works, with migrations applied', async () => {
    const port = await freePort()
    const child = startEntry(devEnv(port))
    const token = await startedToken(child)
    expect(child.stdout()).toContain(`http://localhost:${port}/docs`)
    // Log lines are written in batches (at most 100 ms later); the banner is plain stdout.
    await waitFor(5_000, 'the listening log line', () => (child.stdout().includes('"msg":"listening"') ? true : undefined))

    const base = `http://127.0.0.1:${port}`
    const auth = { authorization: `Bearer ${token}` }
    const list = await fetch(`${base}/api/panels?tenantId=dev-tenant&userId=dev-user`, { headers: auth })
    expect(list.status).toBe(200)
    expect(await list.json()).toEqual([])

    const created = await fetch(`${base}/api/panels`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'From the entry', tenantId: 'dev-tenant', userId: 'dev-user' }),
    })
    expect(created.status).toBe(201)
    const after = await fetch(`${base}/api/panels?tenantId=dev-tenant&userId=dev-user`, { headers: auth })
    expect((await after.json()).map((p: { name: string }) => p.name)).toEqual(['From the entry'])

    expect((await fetch(`${base}/docs`)).status).toBe(200)
    expect(existsSync(join(dir, 'db', 'p.db'))).toBe(true)
    expect(existsSync(join(dir, 'data', '.dev-secrets.json'))).toBe(true)
  })

  it('prints no token when JWT_SECRET is configured', async () => {
    const port = await freePort()
    const child = startEntry({ ...devEnv(port), ...SECRETS })
    await waitFor(20_000, 'the listening log line', () => (child.stdout().includes('"msg":"listening"') ? true : undefined))
    expect(child.stdout()).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/)
    expect(existsSync(join(dir, 'data', '.dev-secrets.json'))).toBe(false)
  })
})

describe('node src/runtime/node.ts: graceful shutdown on SIGTERM', () => {
  it('finishes the in-flight request, answers new connections 503 with Connection: close, logs "stopped" and exits 0', async () => {
    const port = await freePort()
    const child = startEntry(devEnv(port))
    const token = await startedToken(child)

    const body = JSON.stringify({ name: 'Sent slowly', tenantId: 'dev-tenant', userId: 'dev-user' })
    const half = Math.floor(body.length / 2)
    let finish: (() => void) | undefined
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/panels',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = ''
          res.setEncoding('utf8')
          res.on('data', (d) => {
            text += d
          })
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
          res.on('error', reject)
        },
      )
      req.on('error', reject)
      req.write(body.slice(0, half))
      // The rest is written only after the server has begun shutting down (below).
      finish = () => req.end(body.slice(half))
    })
    // Let the request's headers and first half reach the server before the signal.
    await new Promise((r) => setTimeout(r, 300))

    child.proc.kill('SIGTERM')
    await waitFor(5_000, 'the "shutting down" log line', () =>
      child.stdout().includes('"msg":"shutting down"') ? true : undefined,
    )
    // The listener stays open while the connections open at the signal drain (docs/operations.md):
    // a request on a new connection is refused cleanly, not reset.
    const late = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/api/panels', headers: { authorization: `Bearer ${token}` }, agent: false },
        (res) => {
          let text = ''
          res.setEncoding('utf8')
          res.on('data', (d) => {
            text += d
          })
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
        },
      )
      req.on('error', reject)
      req.end()
    })
    expect(late.status).toBe(503)
    expect(late.headers).toMatchObject({ connection: 'close', 'retry-after': '1' })
    expect(JSON.parse(late.body)).toMatchObject({ statusCode: 503, code: 'SERVICE_UNAVAILABLE' })
    expect(child.proc.exitCode).toBeNull()

    finish!()
    const res = await within(5_000, 'the in-flight response', response)
    expect(res.status).toBe(201)
    expect(JSON.parse(res.body)).toMatchObject({ name: 'Sent slowly', tenantId: 'dev-tenant', userId: 'dev-user' })

    // Promptly: the kept-alive socket of the finished request must not hold the process for keepAliveTimeout.
    const code = await within(3_000, 'the entry to exit', child.exited)
    expect(code).toBe(0)
    expect(child.stdout()).toContain('"msg":"stopped"')
  })
})
