import { type FieldIssue, invalid } from '../../errors.ts'

/**
 * The search parameters of `GET /fhir/Group` (docs/fhir.md "Patient lists"), read from the query as
 * FHIR defines them. Unknown parameters follow the client's `Prefer: handling=` (FHIR R4 3.1.1.5.6):
 * `lenient` (the default) ignores them and leaves them out of the `self` link, `strict` refuses them
 * with a 400. A known parameter with a value it cannot take is a 400 either way.
 */

export const GROUP_COUNT_DEFAULT = 50
export const GROUP_COUNT_MAX = 1000

export type NameMatch = 'starts' | 'exact' | 'contains'

export interface GroupSearch {
  /** `_summary=count`: the total only. Otherwise the Groups come in summary form (no members). */
  countOnly: boolean
  /** Every criterion must hold (repeated parameters AND); a criterion holds when one of its values matches (commas OR). */
  names: { match: NameMatch; values: string[] }[]
  /** False when a `type` criterion names no `person`: every list is a person Group, so none matches. */
  typeMatches: boolean
  count: number
  offset: number
  /** The parameters applied, as they go into the `self` link. */
  applied: [string, string][]
}

const NAME_PARAMS: Record<string, NameMatch> = { name: 'starts', 'name:exact': 'exact', 'name:contains': 'contains' }
const SUMMARY_VALUES = ['true', 'count']
const FORMATS = ['json', 'application/json', 'application/fhir+json']

/** True when the request's `Prefer` header asks for `handling=strict`. */
export function strictHandling(prefer: string | undefined): boolean {
  if (!prefer) return false
  return prefer
    .split(/[,;]/)
    .map((p) => p.trim().toLowerCase().replace(/\s+/g, ''))
    .includes('handling=strict')
}

/** FHIR's escaping in a string search value: `\,` is a comma inside a value, not a separator. */
function splitValues(raw: string): string[] {
  const out: string[] = []
  let current = ''
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]
    if (
      ch === '\\' &&
      i + 1 < raw.length &&
      (raw[i + 1] === ',' || raw[i + 1] === '\\' || raw[i + 1] === '$' || raw[i + 1] === '|')
    ) {
      current += raw[++i]
    } else if (ch === ',') {
      out.push(current)
      current = ''
    } else current += ch
  }
  out.push(current)
  return out.filter((v) => v !== '')
}

function wholeNumber(name: string, raw: string, issues: FieldIssue[]): number | undefined {
  if (!/^\d{1,9}$/.test(raw)) {
    issues.push({ path: name, message: `must be a whole number of 0 or more, got "${raw}"` })
    return undefined
  }
  return Number(raw)
}

/** Reads the query of a Group search; throws a 400 naming each refused parameter. */
export function parseGroupSearch(params: [string, string][], strict: boolean): GroupSearch {
  const issues: FieldIssue[] = []
  const search: GroupSearch = {
    countOnly: false,
    names: [],
    typeMatches: true,
    count: GROUP_COUNT_DEFAULT,
    offset: 0,
    applied: [],
  }
  const unknown: string[] = []
  for (const [name, value] of params) {
    if (name in NAME_PARAMS) {
      const values = splitValues(value)
      if (values.length === 0) {
        issues.push({ path: name, message: 'needs a value' })
        continue
      }
      search.names.push({ match: NAME_PARAMS[name], values })
      search.applied.push([name, value])
    } else if (name === 'type') {
      const values = splitValues(value)
      if (values.length === 0) {
        issues.push({ path: name, message: 'needs a value' })
        continue
      }
      if (!values.some(isPersonToken)) search.typeMatches = false
      search.applied.push([name, value])
    } else if (name === '_summary') {
      if (!SUMMARY_VALUES.includes(value)) {
        issues.push({
          path: name,
          message: `"${value}" is not served: Groups are searched in summary form (true) or counted (count); their members are read per Group`,
        })
        continue
      }
      search.countOnly = value === 'count'
      search.applied.push([name, value])
    } else if (name === '_count') {
      const n = wholeNumber(name, value, issues)
      if (n === undefined) continue
      // FHIR lets a server answer fewer than asked: past the maximum, pages are the maximum.
      search.count = Math.min(n, GROUP_COUNT_MAX)
    } else if (name === '_offset') {
      const n = wholeNumber(name, value, issues)
      if (n !== undefined) search.offset = n
    } else if (name === '_format') {
      if (!FORMATS.includes(value)) issues.push({ path: name, message: `only JSON is served (${FORMATS.join(', ')})` })
    } else unknown.push(name)
  }
  if (strict && unknown.length > 0) {
    for (const name of unknown) issues.push({ path: name, message: 'is not a search parameter of Group here' })
  }
  if (issues.length > 0) {
    throw invalid(issues, `Invalid Group search: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
  return search
}

const GROUP_TYPE = 'http://hl7.org/fhir/group-type'

/** A token value naming the group type `person`: `person`, `|person` or `<group-type system>|person`. */
function isPersonToken(value: string): boolean {
  const bar = value.indexOf('|')
  if (bar === -1) return value === 'person'
  const system = value.slice(0, bar)
  return value.slice(bar + 1) === 'person' && (system === '' || system === GROUP_TYPE)
}

/**
 * FHIR string matching (R4 3.1.1.4.7): case- and accent-insensitive, starting with the value by
 * default; `:contains` anywhere; `:exact` the whole string, case and accents included.
 */
export function nameMatches(name: string, criterion: { match: NameMatch; values: string[] }): boolean {
  return criterion.values.some((value) => {
    if (criterion.match === 'exact') return name === value
    const n = fold(name)
    const v = fold(value)
    return criterion.match === 'contains' ? n.includes(v) : n.startsWith(v)
  })
}

const fold = (text: string) => text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase()
