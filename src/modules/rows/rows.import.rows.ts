import { loadFhirPathEngineFor } from '../../engine/fhirpath/engine.ts'
import type { PreparedImport } from './rows.import.prepare.ts'
import { sourceValue } from './rows.import.prepare.ts'
import type { ImportRowErrorDto } from './rows.import.schemas.ts'

type Row = Record<string, unknown>

/** A row of the file mapped to record data `{ <target column name>: value }`. */
export interface MappedRow {
  /** 1-based data row (header excluded). */
  n: number
  data: Row
}

export const isBlank = (v: unknown) =>
  v === null || v === undefined || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)

/**
 * Why a unique value cannot identify a row, or null when it can: missing (absent or null) and
 * blank (`""`, only spaces, an empty list) are told apart, as they are different values.
 */
function unidentifying(field: string, value: unknown): string | null {
  if (value === null || value === undefined) return `${field} is missing; it identifies the row (uniqueFields)`
  if (!isBlank(value)) return null
  return `${field} is blank (${JSON.stringify(value)}); a blank value cannot identify the row (uniqueFields)`
}

/**
 * Applies the mapping to each row: reads each source field, runs its transformation (a formula over
 * `{value}`, with the whole source row as the record its source paths read), checks
 * `requiredFields` and that every `uniqueFields` value can identify the row. A row with a problem is reported in `errors` (one
 * entry per field) and left out.
 */
export async function mapRows(
  prepared: PreparedImport,
  rows: Row[],
  now: Date,
  errors: ImportRowErrorDto[],
): Promise<MappedRow[]> {
  await loadFhirPathEngineFor(prepared.fhirPaths, rows)
  const clock = { now: () => now }
  const out: MappedRow[] = []
  rows.forEach((row, i) => {
    const n = i + 1
    const before = errors.length
    const data: Row = {}
    for (const m of prepared.mappings) {
      let value = sourceValue(row, m.sourceField)
      if (m.transform) {
        const result = m.transform.evaluate({ cells: { value: value ?? null }, record: row }, clock)
        if (result.error) {
          errors.push({
            row: n,
            field: m.target,
            message: `transformation failed (${result.error.code}): ${result.error.message}`,
          })
          continue
        }
        value = result.value
      }
      data[m.target] = value === undefined ? null : value
    }
    for (const f of prepared.required) {
      if (f in data && isBlank(data[f])) errors.push({ row: n, field: f, message: `${f} is required` })
    }
    for (const f of prepared.unique) {
      const problem = f in data && !prepared.required.includes(f) ? unidentifying(f, data[f]) : null
      if (problem) errors.push({ row: n, field: f, message: problem })
    }
    if (errors.length === before) out.push({ n, data })
  })
  return out
}
