import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { expect } from 'vitest'
import { createDb } from '../../src/db/client.ts'
import type { Deps } from '../../src/deps.ts'
import { applyMigrations, MIGRATIONS_DIR } from '../../src/runtime/migrate.ts'

/**
 * A database as an older version of the service left it, for the tests of a data migration: the
 * committed migrations applied up to and including `lastTag` on a file in `dir`, with panels 1 and 2
 * (materialised, versions equal) for the test to fill. `migrateRest()` applies the remaining ones;
 * `deps` is what the scheduler's stale-panel sweep needs.
 */
export async function olderDatabase(dir: string, lastTag: string) {
  const client = createClient({ url: `file:${join(dir, 'panels.db')}` })
  const db = createDb(client)
  await applyMigrations(db, migrationsUpTo(dir, lastTag))
  const run = (sql: string, args: (string | number)[] = []) => client.execute({ sql, args })
  for (const id of [1, 2])
    await run(
      `INSERT INTO panels (id, tenant_id, user_id, name, cohort_rule, created_at, updated_at, columns_version, materialised_version)
       VALUES (?, 't', 'u', 'P', '{"conditions":[],"logic":"AND"}', ?, ?, 3, 3)`,
      [id, NOW, NOW],
    )
  const deps = { db, clock: { now: () => new Date(NOW) } } as unknown as Deps
  return { client, db, run, deps, migrateRest: () => applyMigrations(db) }
}

export const NOW = '2026-01-01T00:00:00.000Z'

/** The committed migrations up to and including `lastTag`, as a folder of their own. */
function migrationsUpTo(dir: string, lastTag: string): string {
  const folder = join(dir, 'migrations')
  cpSync(MIGRATIONS_DIR, folder, { recursive: true })
  const journalPath = join(folder, 'meta/_journal.json')
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] }
  const last = journal.entries.findIndex((e) => e.tag === lastTag)
  expect(last).toBeGreaterThan(-1)
  journal.entries = journal.entries.slice(0, last + 1)
  writeFileSync(journalPath, JSON.stringify(journal))
  return folder
}
