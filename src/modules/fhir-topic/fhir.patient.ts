/**
 * The patient of a row, for the FHIR face's patient lists and its membership notifications
 * (docs/fhir.md "The patient of a row"). Pure.
 *
 * - When the panel's workflow names a `patientReference` column and the row's cell there holds a
 *   value, that value decides: `Patient/<id>` or an absolute URL ending in `/Patient/<id>` is kept
 *   as given; a bare FHIR id (a string, or a whole number) becomes `Patient/<id>`. Any other value
 *   means the row has no patient (the panel said which column holds it, and it holds none).
 * - When there is no such column, or its cell is blank, the row key answers when it is
 *   `Patient/<id>` (the key a FHIR source gives its Patient rows).
 * - Otherwise the row has no patient: it is still counted and listed apart, never dropped.
 */

/** A FHIR id (R4 `id` datatype): letters, digits, `-` and `.`, 1 to 64 of them. */
const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/
const RELATIVE = /^Patient\/[A-Za-z0-9\-.]{1,64}$/
const ABSOLUTE = /^https?:\/\/[^\s]+\/Patient\/[A-Za-z0-9\-.]{1,64}$/

const blank = (value: unknown) => value === null || value === undefined || (typeof value === 'string' && value.trim() === '')

/** The Patient reference a cell value names, or undefined. */
export function patientReferenceOf(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? `Patient/${value}` : undefined
  if (typeof value !== 'string') return undefined
  if (RELATIVE.test(value) || ABSOLUTE.test(value)) return value
  if (FHIR_ID.test(value)) return `Patient/${value}`
  return undefined
}

/**
 * The row's Patient reference, or undefined when it has none. `column` is whether the workflow
 * names a patient column, `cell` that column's value for the row.
 */
export function patientOfRow(key: string, column: boolean, cell: unknown): string | undefined {
  if (column && !blank(cell)) return patientReferenceOf(cell)
  return RELATIVE.test(key) ? key : undefined
}
