import { type FieldIssue, invalid } from '../../errors.ts'
import type { RunParametersInput } from './viewdefinitions.schemas.ts'

/**
 * The `Parameters` of `$viewdefinition-run` (SQL-ON-FHIR.md, "The operation"), read and checked in
 * one pass: every problem is one 400 VALIDATION_ERROR naming `parameter[i]…`.
 */

export type RunFormat = 'json' | 'ndjson' | 'csv'

export interface RunRequest {
  viewResource?: Record<string, unknown>
  /** The id of `viewReference: { reference: "ViewDefinition/<id>" }`. */
  viewReference?: number
  resources: unknown[]
  /** Whether `resource` parameters were given (zero of them is an empty input, not a `source`). */
  hasResources: boolean
  source?: number
  format: RunFormat
  header: boolean
  limit?: number
  /** `Patient/<id>` of the `patient` parameter. */
  patient?: string
  since?: string
}

/** The id of a reference to a stored view (`ViewDefinition/<id>`, any base URL before it), else undefined. */
export function viewReferenceId(reference: unknown): number | undefined {
  const match = typeof reference === 'string' ? reference.match(/^(?:.*\/)?ViewDefinition\/([1-9]\d{0,15})$/) : null
  return match ? Number(match[1]) : undefined
}

const FORMATS = new Set<RunFormat>(['json', 'ndjson', 'csv'])
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/

/** Reads the parameters; `storedId` is the `{id}` of the instance-level URL, if any. */
export function readRunParameters(body: RunParametersInput, storedId?: number): RunRequest {
  const issues: FieldIssue[] = []
  const request: RunRequest = { resources: [], hasResources: false, format: 'json', header: true }
  const seen = new Set<string>()
  const readOne = (p: Record<string, unknown>, i: number) => {
    const at = `parameter[${i}]`
    const name = p.name
    if (typeof name !== 'string') return issues.push({ path: `${at}.name`, message: 'required' })
    // A value's message names its parameter (`_format must be …`): the path only says where it stands.
    const bad = (field: string, message: string) =>
      issues.push({ path: `${at}.${field}`, message: field === 'name' ? message : `${name} ${message}` })
    if (name !== 'resource' && seen.has(name)) return bad('name', `${name} may be given once`)
    seen.add(name)
    switch (name) {
      case 'viewResource':
        if (!isObject(p.resource)) return bad('resource', 'must be the ViewDefinition resource')
        request.viewResource = p.resource
        return
      case 'viewReference': {
        const id = viewReferenceId((p.valueReference as { reference?: unknown } | undefined)?.reference)
        if (id === undefined) return bad('valueReference', 'must be { reference: "ViewDefinition/<id>" }')
        request.viewReference = id
        return
      }
      case 'resource':
        if (!isObject(p.resource)) return bad('resource', 'must be a FHIR resource')
        request.resources.push(p.resource)
        request.hasResources = true
        return
      case 'source': {
        const value = p.valueString ?? p.valueId ?? p.valueInteger
        if (!/^[1-9]\d{0,15}$/.test(String(value ?? ''))) return bad('valueString', 'must be the id of one of your data sources')
        request.source = Number(value)
        return
      }
      case '_format': {
        const value = String(p.valueCode ?? p.valueString ?? '')
          .replace(/^application\/(x-)?/, '')
          .replace(/^text\//, '')
        if (!FORMATS.has(value as RunFormat)) return bad('valueCode', 'must be json, ndjson or csv')
        request.format = value as RunFormat
        return
      }
      case 'header':
        if (typeof p.valueBoolean !== 'boolean') return bad('valueBoolean', 'must be a boolean')
        request.header = p.valueBoolean
        return
      case '_limit':
        if (!Number.isSafeInteger(p.valueInteger) || (p.valueInteger as number) < 1)
          return bad('valueInteger', 'must be a positive integer')
        request.limit = p.valueInteger as number
        return
      case 'patient': {
        const reference = (p.valueReference as { reference?: unknown } | undefined)?.reference
        const match = typeof reference === 'string' ? reference.match(/(?:^|\/)Patient\/([A-Za-z0-9\-.]{1,64})$/) : null
        if (!match) return bad('valueReference', 'must be { reference: "Patient/<id>" }')
        request.patient = `Patient/${match[1]}`
        return
      }
      case '_since': {
        const value = p.valueInstant ?? p.valueDateTime
        if (typeof value !== 'string' || !INSTANT.test(value))
          return bad('valueInstant', 'must be an instant (2026-01-01T00:00:00Z)')
        request.since = new Date(value).toISOString()
        return
      }
      default:
        return bad('name', `unknown parameter ${name}`)
    }
  }
  for (const [i, p] of (body.parameter ?? []).entries()) readOne(p, i)
  const views = [storedId, request.viewResource, request.viewReference].filter((v) => v !== undefined).length
  if (storedId !== undefined && views > 1) {
    issues.push({ path: 'parameter', message: 'the URL names the view: give neither viewResource nor viewReference' })
  } else if (views !== 1) {
    issues.push({ path: 'parameter', message: 'exactly one of viewResource and viewReference is required' })
  }
  if (request.hasResources && request.source !== undefined) {
    issues.push({ path: 'parameter', message: 'resource and source cannot be combined' })
  }
  if (request.since !== undefined && request.source === undefined) {
    issues.push({ path: 'parameter', message: '_since applies to a source only' })
  }
  if (issues.length > 0) {
    throw invalid(issues, `Invalid $viewdefinition-run parameters: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
  return request
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
