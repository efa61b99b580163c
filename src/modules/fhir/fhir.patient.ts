/**
 * The patient of a row (FHIR-EXCHANGE.md "Patient lists"; docs/fhir.md): the value of the panel's
 * workflow `patientReference` column when the row has one, else the row's key when the key is
 * `Patient/<id>`. A value may be `Patient/<id>`, a bare FHIR id (read as `Patient/<id>`) or an
 * absolute URL ending in `Patient/<id>` (kept as given). Anything else is no patient: null.
 */

const ID = '[A-Za-z0-9\\-.]{1,64}'
const RELATIVE = new RegExp(`^Patient/${ID}$`)
const BARE = new RegExp(`^${ID}$`)
const ABSOLUTE = new RegExp(`^https?://\\S+/Patient/${ID}$`)

/** `value` as a Patient reference, or null. */
export function patientReferenceOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return `Patient/${value}`
  if (typeof value !== 'string') return null
  if (RELATIVE.test(value) || ABSOLUTE.test(value)) return value
  if (BARE.test(value)) return `Patient/${value}`
  return null
}

/** The patient of a row shown as `row` (by column name) with record key `key`. */
export function patientOfRow(row: Record<string, unknown> | null, key: string, patientColumn: string | null): string | null {
  if (patientColumn !== null && row) {
    const found = patientReferenceOf(row[patientColumn])
    if (found) return found
  }
  return RELATIVE.test(key) ? key : null
}
