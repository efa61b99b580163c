import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Migrates a local D1 database in `persistTo` with the deploy step's own command
 * (`wrangler d1 migrations apply panels --local`), for Miniflare's `d1Persist: <persistTo>/v3/d1`.
 */
export function migrateLocalD1(persistTo: string) {
  execFileSync(
    process.execPath,
    [
      join(ROOT, 'node_modules/wrangler/bin/wrangler.js'),
      'd1',
      'migrations',
      'apply',
      'panels',
      '--local',
      '--persist-to',
      persistTo,
    ],
    { cwd: ROOT, stdio: 'pipe', timeout: 120_000, env: { ...process.env, CI: 'true', WRANGLER_SEND_METRICS: 'false' } },
  )
}
