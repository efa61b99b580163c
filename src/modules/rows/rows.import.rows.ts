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
  /** With uniqueFields: the record key made of their values. */
  key?: string
  /** `MRN = 42, Site = B`: the unique values, for messages. */
  label?: string
}

export const isBlank = (v: unknown) =>
  v === null || v === undefined || (typeof v === 'string' && v.trim() === '') || (Array.isArray(v) && v.length === 0)

const keyText = (v: unknown) => (typeof v === 'string' ? v.trim() : typeof v === 'object' ? JSON.stringify(v) : String(v))

/**
 * Applies the mapping to each row: reads each source field, runs its transformation (a formula over
 * `{value}`, with the whole source row as the record its source paths read), checks
 * `requiredFields` and derives the unique key. A row with a problem is reported in `errors` (one
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
    let key: string | undefined
    let label: string | undefined
    if (prepared.unique.length > 0) {
      const blank = prepared.unique.filter((f) => f in data && isBlank(data[f]) && !prepared.required.includes(f))
      for (const f of blank) errors.push({ row: n, field: f, message: `${f} is empty; it identifies the row (uniqueFields)` })
      key = JSON.stringify(prepared.unique.map((f) => keyText(data[f])))
      label = prepared.unique.map((f) => `${f} = ${keyText(data[f])}`).join(', ')
    }
    if (errors.length === before) out.push({ n, data, key, label })
  })
  return out
}
