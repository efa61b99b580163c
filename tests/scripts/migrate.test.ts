import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from '@libsql/client'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SCRIPT = join(ROOT, 'scripts/migrate.ts')
const TSX = join(ROOT, 'node_modules/tsx/dist/loader.mjs')

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migrate-script-'))
})

afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

function runMigrate(env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', TSX, SCRIPT], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, ...env },
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
      reject(new Error(`db:migrate did not finish within 20 s: ${stderr}`))
    }, 20_000)
    proc.once('error', reject)
    proc.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

describe('npm run db:migrate', () => {
  it('creates the schema in the DATABASE_URL file and is idempotent', async () => {
    const file = join(dir, 'nested', 'm.db')
    const first = await runMigrate({ DATABASE_URL: `file:${file}` })
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`file:${file}: up to date`)
    const second = await runMigrate({ DATABASE_URL: `file:${file}` })
    expect(second.code).toBe(0)

    const client = createClient({ url: `file:${file}` })
    try {
      const tables = await client.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'panels'")
      expect(tables.rows).toHaveLength(1)
    } finally {
      client.close()
    }
  })

  it('needs no application secrets, even with NODE_ENV=production', async () => {
    const run = await runMigrate({ NODE_ENV: 'production', DATABASE_URL: `file:${join(dir, 'p.db')}` })
    expect(run.code).toBe(0)
  })

  it('exits 1 naming DATABASE_URL when it is not a libSQL URL', async () => {
    const run = await runMigrate({ DATABASE_URL: 'mysql://x' })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('DATABASE_URL:')
  })
})
