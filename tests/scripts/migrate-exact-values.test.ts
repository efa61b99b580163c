import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { recomputeStalePanels } from '../../src/rowstore/recompute.ts'
import { NOW, olderDatabase } from './older-database.ts'

/**
 * Migration 0004 (exact values) on a database as the version before it left one: migrations 0000–0003
 * applied, columns storing fhirPath and sourceField equal, cells materialised under the old rules
 * ("" and [] as null, a one-element array unwrapped). After it, every base column reads by the right
 * path and the scheduler's stale-panel sweep rewrites the rows with the source's exact values.
 */

let dir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'migrate-exact-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

describe('migration 0004_exact_values', () => {
  it('sets how each column reads and re-materialises old rows exactly', async () => {
    const { client, run, deps, migrateRest } = await olderDatabase(dir, '0003_materialised_version')
    // Panel 1: an API source; panel 2: a FHIR source. Both materialised (versions equal).
    await run(
      `INSERT INTO data_sources (id, tenant_id, user_id, panel_id, type, config, sync_status, created_at, updated_at)
       VALUES (1, 't', 'u', 1, 'api', '{}', 'success', ?, ?), (2, 't', 'u', 2, 'fhir', '{}', 'success', ?, ?)`,
      [NOW, NOW, NOW, NOW],
    )
    const column = (id: number, panel: number, name: string, fhirPath: string, sourceField: string) =>
      run(
        `INSERT INTO columns (id, tenant_id, user_id, panel_id, column_type, name, type, source_field, fhir_path, properties, metadata, created_at, updated_at)
         VALUES (?, 't', 'u', ?, 'base', ?, 'text', ?, ?, '{}', '{}', ?, ?)`,
        [id, panel, name, sourceField, fhirPath, NOW, NOW],
      )
    await column(10, 1, 'Color', 'color', 'color')
    await column(11, 1, 'Phone', 'phone', 'phone')
    await column(12, 1, 'Explicit', 'color.first()', 'color')
    await column(20, 2, 'Given', 'name.given', 'name.given')
    const record = (id: number, panel: number, source: number, data: unknown, cells: unknown) =>
      run(
        `INSERT INTO records (id, tenant_id, panel_id, data_source_id, generation, key, data, cells, cells_version, created_at, updated_at)
         VALUES (?, 't', ?, ?, 0, ?, ?, ?, 3, ?, ?)`,
        [id, panel, source, String(id), JSON.stringify(data), JSON.stringify(cells), NOW, NOW],
      )
    // What the old version stored: the one-element array unwrapped, "" as null.
    await record(1, 1, 1, { color: ['blue'], phone: '' }, { 10: 'blue', 11: null, 12: 'blue' })
    await record(2, 2, 2, { resourceType: 'Patient', name: [{ given: ['Ann'] }, { given: ['Bo'] }] }, { 20: ['Ann', 'Bo'] })

    await migrateRest()

    const readBy = await client.execute('SELECT id, read_by FROM columns ORDER BY id')
    expect(readBy.rows.map((r) => [Number(r.id), r.read_by])).toEqual([
      [10, 'sourceField'],
      [11, 'sourceField'],
      [12, 'fhirPath'],
      [20, 'fhirPath'],
    ])
    const stale = await client.execute('SELECT count(*) AS n FROM panels WHERE materialised_version <> columns_version')
    expect(Number(stale.rows[0].n)).toBe(2)

    expect(await recomputeStalePanels(deps)).toBe(1)
    const cells = await client.execute('SELECT id, cells FROM records ORDER BY id')
    expect(JSON.parse(String(cells.rows[0].cells))).toEqual({ 10: ['blue'], 11: '', 12: 'blue' })
    expect(JSON.parse(String(cells.rows[1].cells))).toEqual({ 20: ['Ann', 'Bo'] })
    const after = await client.execute('SELECT count(*) AS n FROM panels WHERE materialised_version <> columns_version')
    expect(Number(after.rows[0].n)).toBe(0)
    client.close()
  })
})
