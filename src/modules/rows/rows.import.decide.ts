import type { ServiceContext } from '../../context.ts'
import { type PanelPlan, prepareRows, rowOf } from '../../rowstore/materialise.ts'
import { type PanelMatch, panelRowsByKey, type UniqueColumn, uniqueKey, uniqueLabel } from './rows.import.match.ts'
import type { PreparedImport } from './rows.import.prepare.ts'
import type { MappedRow } from './rows.import.rows.ts'
import type { ImportRowErrorDto } from './rows.import.schemas.ts'
import { contentKeys, freeKeys, type ImportSource, type StoredRow } from './rows.import.write.ts'

type Data = Record<string, unknown>
type Materialised = ReturnType<typeof rowOf>

/** What an import writes, and how many file rows created or updated a row. */
export interface ImportDecision {
  inserts: StoredRow[]
  updates: (StoredRow & { id: number })[]
  imported: number
  updated: number
}

/** The row a unique key resolves to: new, or a stored import record; file rows merge into it in order. */
interface Claim {
  firstRow: number
  id?: number
  data: Data
  /** The cells of `data` when they are known (no value merged in that the last file row lacks), else computed at the end. */
  row?: Materialised
}

/**
 * Decides each mapped row (docs/import-export.md "Matching"). Its cells are computed first, and a
 * row whose mapped columns fail their type or validation rules is rejected with those messages.
 * Without `uniqueFields` every row is a new record. With them, the row's key is its unique cells
 * (rows.import.match.ts), matched against the panel's stored rows and the earlier rows of the file:
 * - a match of another data source's row is rejected: an import cannot change a synced row;
 * - without `updateExisting` any match is rejected with the conflicting values;
 * - with it, the row is merged into the one imported row it matches (stored data, then each file
 *   row in order, so the later row wins) and counted as updated; a key matching several imported
 *   rows is rejected, as there is no telling which to update.
 */
export async function decideImport(
  ctx: ServiceContext,
  prepared: PreparedImport,
  source: ImportSource,
  plan: PanelPlan,
  mapped: MappedRow[],
  now: Date,
  errors: ImportRowErrorDto[],
): Promise<ImportDecision> {
  const targets = new Set(prepared.mappings.map((m) => m.target))
  await prepareRows(
    plan,
    mapped.map((r) => r.data),
  )
  const checked: (MappedRow & { row: Materialised })[] = []
  for (const r of mapped) {
    const row = rowOf(plan, source.id, r.data, now)
    const bad = row.errors.filter((e) => targets.has(e.column))
    for (const e of bad) errors.push({ row: r.n, field: e.column, message: e.message })
    if (bad.length === 0) checked.push({ ...r, row })
  }
  const stored = (r: { data: Data; row: Materialised }, key: string): StoredRow => ({
    key,
    data: r.data,
    cells: r.row.cells,
    errors: r.row.errors.length > 0 ? r.row.errors : null,
  })
  if (prepared.unique.length === 0) {
    const keys = await contentKeys(ctx, source, checked)
    return { inserts: checked.map((r, i) => stored(r, keys[i])), updates: [], imported: checked.length, updated: 0 }
  }

  const unique = uniqueColumns(plan, prepared.unique)
  const field = prepared.unique.join(', ')
  const keyed = checked.filter((r) => {
    const missing = unique.filter((c) => (r.row.cells[String(c.id)] ?? null) === null)
    for (const c of missing)
      errors.push({ row: r.n, field: c.name, message: `${c.name} is missing; it identifies the row (uniqueFields)` })
    return missing.length === 0
  })
  const matches = await panelRowsByKey(
    ctx.db,
    ctx.scope.tenantId,
    plan.panelId,
    unique,
    keyed.map((r) => r.row.cells),
  )
  const claims = new Map<string, Claim>()
  let imported = 0
  let updated = 0
  for (const r of keyed) {
    const key = uniqueKey(r.row.cells, unique)
    const label = uniqueLabel(r.row.cells, unique)
    const earlier = claims.get(key)
    if (earlier) {
      if (!prepared.updateExisting) {
        errors.push({ row: r.n, field, message: `duplicate of row ${earlier.firstRow} (${label})` })
        continue
      }
      earlier.row = covers(r.data, earlier.data) ? r.row : undefined
      earlier.data = { ...earlier.data, ...r.data }
      updated++
      continue
    }
    const found = matches.get(key) ?? []
    const problem = matchProblem(found, label, prepared.updateExisting)
    if (problem) {
      errors.push({ row: r.n, field, message: problem })
      continue
    }
    const [match] = found
    if (match) {
      const row = covers(r.data, match.data ?? {}) ? r.row : undefined
      claims.set(key, { firstRow: r.n, id: match.id, data: { ...match.data, ...r.data }, row })
      updated++
    } else {
      claims.set(key, { firstRow: r.n, data: r.data, row: r.row })
      imported++
    }
  }

  const merged = [...claims.values()].filter((c) => c.row === undefined)
  await prepareRows(
    plan,
    merged.map((c) => c.data),
  )
  for (const c of merged) c.row = rowOf(plan, source.id, c.data, now)
  const fresh = [...claims.entries()].filter(([, c]) => c.id === undefined)
  const keys = await freeKeys(
    ctx.db,
    source,
    fresh.map(([key]) => key),
  )
  return {
    inserts: fresh.map(([, c], i) => stored({ data: c.data, row: c.row! }, keys[i])),
    updates: [...claims.entries()]
      .filter(([, c]) => c.id !== undefined)
      .map(([key, c]) => ({ ...stored({ data: c.data, row: c.row! }, key), id: c.id! })),
    imported,
    updated,
  }
}

// --- Internal helpers ---

/** The unique target columns with their ids (they are columns of the plan: mapped, or created by this import). */
function uniqueColumns(plan: PanelPlan, names: string[]): UniqueColumn[] {
  return names.map((name) => {
    const planned = plan.plan.columns.find((p) => p.column.name === name)
    if (!planned) throw new Error(`unique column '${name}' is not a column of panel ${plan.panelId}`)
    return { name, id: planned.column.id }
  })
}

/** True when `data` has every field of `under`: merging it over `under` gives `data`'s own cells. */
function covers(data: Data, under: Data): boolean {
  for (const k in under) if (!Object.hasOwn(data, k)) return false
  return true
}

/** Why a row whose key matches stored rows cannot be imported, or null when it may (none, or one to update). */
function matchProblem(found: PanelMatch[], label: string, updateExisting: boolean): string | null {
  if (found.length === 0) return null
  const synced = found.find((m) => m.sourceType !== 'import')
  if (synced) {
    return (
      `${label} matches a row of the panel's ${synced.sourceType} data source ${synced.sourceId}; ` +
      'an import cannot change a synced row (its next sync would overwrite it)'
    )
  }
  if (!updateExisting) return `a row with ${label} already exists (set options.updateExisting to update it)`
  if (found.length > 1) return `${label} matches ${found.length} imported rows; there is no telling which one to update`
  return null
}
