/**
 * The FHIR R4 datatypes the connectors check what servers send against: resource type names, ids
 * and instants (the `fhir` source's bulk and Subscription modes).
 */

/** A FHIR resource type name (`Patient`). */
export const RESOURCE_TYPE = /^[A-Z][A-Za-z]{1,63}$/
/** A FHIR id (letters, digits, `-` and `.`, at most 64). */
export const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/
/** A FHIR id and not dots only: `.` or `..` would address something else in a key or a URL path. */
export const isFhirId = (id: unknown): id is string => typeof id === 'string' && FHIR_ID.test(id) && !/^\.+$/.test(id)

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d{1,9})?(?:Z|[+-](?:(?:0\d|1[0-3]):[0-5]\d|14:00))$/
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * A FHIR `instant` (YYYY-MM-DDThh:mm:ss(.sss)?(Z|±hh:mm), FHIR R4 datatypes) on a date that exists:
 * `2026-13-45T99:99:99Z` is refused, and 29 February only in a leap year.
 */
export function isFhirInstant(value: unknown): value is string {
  const m = typeof value === 'string' ? INSTANT.exec(value) : null
  if (!m) return false
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  if (year < 1 || month < 1 || month > 12 || day < 1) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])
}

/** A FHIR instant as an ISO instant in UTC (milliseconds), for comparing; anything else undefined. */
export function instantOf(value: unknown): string | undefined {
  if (!isFhirInstant(value)) return undefined
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString()
}
