import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createDb } from '../../src/db/client.ts'
import type { Deps } from '../../src/deps.ts'
import { recomputeStalePanels } from '../../src/rowstore/recompute.ts'
import { applyMigrations, MIGRATIONS_DIR } from '../../src/runtime/migrate.ts'

/**
 * Migration 0014 (typed blanks) on a database the version before it left: a "" materialised into a
 * number column as "". The migration marks the panels with a typed base column stale, and the
 * scheduler's sweep rewrites the cell as null; a panel of text columns only is left alone.
 */

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migrate-blanks-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

/** The committed migrations up to and including `lastTag`, as a folder of their own. */
function migrationsUpTo(lastTag: string): string {
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

const NOW = '2026-01-01T00:00:00.000Z'

describe('migration 0014_typed_blanks', () => {
  it('re-materialises panels with a typed column, so a stored "" in a number column becomes null', async () => {
    const client = createClient({ url: `file:${join(dir, 'panels.db')}` })
    const db = createDb(client)
    await applyMigrations(db, migrationsUpTo('0013_view_password_failures'))
    const run = (sql: string, args: (string | number)[] = []) => client.execute({ sql, args })
    for (const id of [1, 2])
      await run(
        `INSERT INTO panels (id, tenant_id, user_id, name, cohort_rule, created_at, updated_at, columns_version, materialised_version)
         VALUES (?, 't', 'u', 'P', '{"conditions":[],"logic":"AND"}', ?, ?, 3, 3)`,
        [id, NOW, NOW],
      )
    await run(
      `INSERT INTO data_sources (id, tenant_id, user_id, panel_id, type, config, sync_status, created_at, updated_at)
       VALUES (1, 't', 'u', 1, 'csv', '{}', 'success', ?, ?), (2, 't', 'u', 2, 'csv', '{}', 'success', ?, ?)`,
      [NOW, NOW, NOW, NOW],
    )
    const column = (id: number, panel: number, name: string, field: string, type: string) =>
      run(
        `INSERT INTO columns (id, tenant_id, user_id, panel_id, column_type, name, type, source_field, fhir_path, read_by, properties, metadata, created_at, updated_at)
         VALUES (?, 't', 'u', ?, 'base', ?, ?, ?, ?, 'sourceField', '{}', '{}', ?, ?)`,
        [id, panel, name, type, field, field, NOW, NOW],
      )
    await column(10, 1, 'Age', 'age', 'Number')
    await column(11, 1, 'Note', 'note', 'text')
    await column(20, 2, 'Note', 'note', 'text')
    const record = (id: number, panel: number, data: unknown, cells: unknown) =>
      run(
        `INSERT INTO records (id, tenant_id, panel_id, data_source_id, generation, key, data, cells, cells_version, created_at, updated_at)
         VALUES (?, 't', ?, ?, 0, ?, ?, ?, 3, ?, ?)`,
        [id, panel, panel, String(id), JSON.stringify(data), JSON.stringify(cells), NOW, NOW],
      )
    await record(1, 1, { age: '', note: '' }, { 10: '', 11: '' })
    await record(2, 2, { note: '' }, { 20: '' })

    await applyMigrations(db)

    const stale = await client.execute('SELECT id FROM panels WHERE materialised_version <> columns_version')
    expect(stale.rows.map((r) => Number(r.id))).toEqual([1])
    const deps = { db, clock: { now: () => new Date(NOW) } } as unknown as Deps
    expect(await recomputeStalePanels(deps)).toBe(1)
    const cells = await client.execute('SELECT id, cells, data FROM records ORDER BY id')
    expect(JSON.parse(String(cells.rows[0].cells))).toEqual({ 10: null, 11: '' })
    expect(JSON.parse(String(cells.rows[0].data))).toEqual({ age: '', note: '' })
    expect(JSON.parse(String(cells.rows[1].cells))).toEqual({ 20: '' })
    client.close()
  })
})
