import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseConfig } from '../../src/config.ts'

export const BENCH_SECRET = 'bench-secret-0123456789-0123456789-abcdef'

/** Runs `fn` in a fresh temporary folder, removed afterwards unless BENCH_KEEP_DIR is set. */
export async function inTempDir(prefix: string, fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  try {
    await fn(dir)
  } finally {
    if (process.env.BENCH_KEEP_DIR) console.log(`kept ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  }
}

/** The configuration of an in-process bench service on a libSQL file in `dir` (no scheduler, quiet logs). */
export const benchConfig = (dir: string, database: string, extra: Record<string, string> = {}) =>
  parseConfig({
    DATABASE_URL: `file:${join(dir, database)}`,
    FILES_DIR: dir,
    JWT_SECRET: BENCH_SECRET,
    ENCRYPTION_KEY: 'bench-encryption-key',
    LOG_LEVEL: 'error',
    SYNC_SCHEDULER: 'false',
    ...extra,
  })
