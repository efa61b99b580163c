import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { recomputeStalePanels } from '../../src/rowstore/recompute.ts'
import { NOW, olderDatabase } from './older-database.ts'

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

describe('migration 0014_typed_blanks', () => {
  it('re-materialises panels with a typed column, so a stored "" in a number column becomes null', async () => {
    const { client, run, deps, migrateRest } = await olderDatabase(dir, '0013_view_password_failures')
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

    await migrateRest()

    const stale = await client.execute('SELECT id FROM panels WHERE materialised_version <> columns_version')
    expect(stale.rows.map((r) => Number(r.id))).toEqual([1])
    expect(await recomputeStalePanels(deps)).toBe(1)
    const cells = await client.execute('SELECT id, cells, data FROM records ORDER BY id')
    expect(JSON.parse(String(cells.rows[0].cells))).toEqual({ 10: null, 11: '' })
    expect(JSON.parse(String(cells.rows[0].data))).toEqual({ age: '', note: '' })
    expect(JSON.parse(String(cells.rows[1].cells))).toEqual({ 20: '' })
    client.close()
  })
})
