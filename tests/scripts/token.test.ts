import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { verify } from 'hono/jwt'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SCRIPT = join(ROOT, 'scripts/token.ts')
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs')
const SECRET = 'token-script-test-secret-0123456789abcdef'

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'token-script-'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

/** Runs scripts/token.ts from a temp dir with only `env` (plus PATH/HOME); bounded to 20 s. */
function runToken(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', TSX, SCRIPT, ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    proc.stdout.on('data', (d) => {
      stdout += d
    })
    proc.stderr.on('data', (d) => {
      stderr += d
    })
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`token script did not finish within 20 s: ${stderr}`))
    }, 20_000)
    proc.once('error', reject)
    proc.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

describe('npm run token', () => {
  it('prints only a token signed with JWT_SECRET carrying tenantId, userId and role', async () => {
    const run = await runToken(['--tenant', 'tenant-a', '--user', 'user-1', '--role', 'admin'], { JWT_SECRET: SECRET })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+\n$/)
    const claims = await verify(run.stdout.trim(), SECRET, 'HS256')
    expect(claims).toMatchObject({ tenantId: 'tenant-a', userId: 'user-1', sub: 'user-1', role: 'admin' })
    expect(Math.abs((claims.exp as number) - (nowSeconds() + 24 * 3600))).toBeLessThanOrEqual(30)
    expect(existsSync(join(dir, 'data'))).toBe(false)
  })

  it('carries --groups as the groups claim, and refuses an empty list', async () => {
    const run = await runToken(['-t', 't', '-u', 'u', '--groups', 'nurses, ward-3'], { JWT_SECRET: SECRET })
    expect(run.code).toBe(0)
    const claims = await verify(run.stdout.trim(), SECRET, 'HS256')
    expect(claims.groups).toEqual(['nurses', 'ward-3'])
    const empty = await runToken(['-t', 't', '-u', 'u', '--groups', ' , '], { JWT_SECRET: SECRET })
    expect(empty.code).toBe(1)
    expect(empty.stderr).toContain('--groups must name at least one group')
  })

  it.each([
    ['90s', 90],
    ['15m', 900],
    ['24h', 86_400],
    ['7d', 604_800],
  ])('honours --ttl %s', async (ttl, seconds) => {
    const run = await runToken(['--tenant', 't', '--user', 'u', '--ttl', ttl], { JWT_SECRET: SECRET })
    expect(run.code).toBe(0)
    const claims = await verify(run.stdout.trim(), SECRET, 'HS256')
    expect((claims.exp as number) - (claims.iat as number)).toBe(seconds)
    expect(Math.abs((claims.exp as number) - (nowSeconds() + seconds))).toBeLessThanOrEqual(30)
    expect(claims.role).toBeUndefined()
  })

  it('uses the development secret of npm start when JWT_SECRET is unset', async () => {
    const run = await runToken(['-t', 'dev-tenant', '-u', 'dev-user'])
    expect(run.code).toBe(0)
    const stored = JSON.parse(readFileSync(join(dir, 'data', '.dev-secrets.json'), 'utf8'))
    const claims = await verify(run.stdout.trim(), stored.jwtSecret, 'HS256')
    expect(claims).toMatchObject({ tenantId: 'dev-tenant', userId: 'dev-user' })
    const again = await runToken(['-t', 'dev-tenant', '-u', 'dev-user'])
    await expect(verify(again.stdout.trim(), stored.jwtSecret, 'HS256')).resolves.toMatchObject({ userId: 'dev-user' })
  })

  it.each([
    [['--user', 'u'], '--tenant is required'],
    [['--tenant', 't'], '--user is required'],
    [['--tenant', 't', '--user', 'u', '--ttl', '5x'], '--ttl "5x"'],
    [['--tenant', 't', '--user', 'u', '--ttl', '0h'], '--ttl "0h"'],
    [['--tenant', 't', '--user', 'u', '--colour', 'red'], "Unknown option '--colour'"],
    [['--tenant'], 'argument missing'],
  ])('exits 1 with a usage message for %j', async (args, message) => {
    const run = await runToken(args, { JWT_SECRET: SECRET })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain(message)
    expect(run.stderr).toContain('Usage: npm run -s token -- --tenant <tenantId> --user <userId>')
  })

  it('exits 1 naming the variable when the configuration cannot give a secret', async () => {
    const run = await runToken(['--tenant', 't', '--user', 'u'], { NODE_ENV: 'production' })
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('JWT_SECRET')
  })
})
