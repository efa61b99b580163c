import { type FieldIssue, invalid } from '../../errors.ts'
import { readRunParameters, viewReferenceId } from './viewdefinitions.parameters.ts'
import type { RunParametersInput } from './viewdefinitions.schemas.ts'

/**
 * The `Parameters` of `$viewdefinition-export` (SQL-on-FHIR v2 OperationDefinition
 * ViewDefinitionExport; docs/fhir.md "ViewDefinition export"), read and checked in one pass: every
 * problem is one 400 VALIDATION_ERROR naming `parameter[i]…` (an OperationOutcome under /fhir).
 * Beside the specification's parameters, `resource` takes the input inline as `$viewdefinition-run`
 * does; `group` and `_limit` are refused by name.
 */

export type ExportFormat = 'ndjson' | 'csv'

/** One `view` to export: a ViewDefinition inline or stored, and the name of its output. */
export interface ExportView {
  name?: string
  viewResource?: Record<string, unknown>
  viewReference?: number
}

export interface ExportRequest {
  views: ExportView[]
  resources: unknown[]
  hasResources: boolean
  source?: number
  format: ExportFormat
  header: boolean
  /** `Patient/<id>` keys of the `patient` parameters (a resource of any of them is kept). */
  patients: string[]
  since?: string
  clientTrackingId?: string
}

const FORMATS: Record<string, ExportFormat> = {
  ndjson: 'ndjson',
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/fhir+ndjson': 'ndjson',
  csv: 'csv',
  'text/csv': 'csv',
}

/** Reads the parameters; `storedId` is the `{id}` of the instance-level URL, if any (it names the one view). */
export function readExportParameters(body: RunParametersInput, storedId?: number): ExportRequest {
  const issues: FieldIssue[] = []
  const request: ExportRequest = { views: [], resources: [], hasResources: false, format: 'ndjson', header: true, patients: [] }
  // What export shares with run (resource, source, header, patient, _since) is read by run's reader,
  // one parameter at a time, so both say the same of the same value.
  const once = new Set<string>()
  for (const [i, p] of (body.parameter ?? []).entries()) {
    const at = `parameter[${i}]`
    const name = p.name
    if (typeof name !== 'string') {
      issues.push({ path: `${at}.name`, message: 'required' })
      continue
    }
    const bad = (field: string, message: string) =>
      issues.push({ path: `${at}.${field}`, message: field === 'name' ? message : `${name} ${message}` })
    if (['_format', 'source', 'header', '_since', 'clientTrackingId'].includes(name)) {
      if (once.has(name)) {
        bad('name', `${name} may be given once`)
        continue
      }
      once.add(name)
    }
    switch (name) {
      case 'view': {
        const view = readView(p, at, issues)
        if (view) request.views.push(view)
        break
      }
      case '_format': {
        const format = FORMATS[String(p.valueCode ?? p.valueString ?? '')]
        if (!format) bad('valueCode', 'must be ndjson or csv')
        else request.format = format
        break
      }
      case 'clientTrackingId':
        if (typeof p.valueString !== 'string' || p.valueString === '') bad('valueString', 'must be a string')
        else request.clientTrackingId = p.valueString
        break
      case 'patient':
      case 'resource':
      case 'source':
      case 'header':
      case '_since':
        sharedParameter(p, i, issues, request)
        break
      case 'group':
        bad('name', 'group is not supported: give the patients as patient parameters')
        break
      default:
        bad('name', `unknown parameter ${name}`)
    }
  }
  if (storedId !== undefined) {
    if (request.views.length > 0) issues.push({ path: 'parameter', message: 'the URL names the view: give no view parameter' })
    request.views = [{ viewReference: storedId }]
  } else if (request.views.length === 0) {
    issues.push({ path: 'parameter', message: 'at least one view is required' })
  }
  if (request.hasResources && request.source !== undefined) {
    issues.push({ path: 'parameter', message: 'resource and source cannot be combined' })
  }
  if (request.since !== undefined && request.source === undefined) {
    issues.push({ path: 'parameter', message: '_since applies to a source only' })
  }
  if (issues.length > 0) {
    throw invalid(issues, `Invalid $viewdefinition-export parameters: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  }
  return request
}

// --- Internal helpers ---

/** A `view` parameter: its parts `name`, and exactly one of `viewResource` and `viewReference`. */
function readView(p: Record<string, unknown>, at: string, issues: FieldIssue[]): ExportView | undefined {
  const view: ExportView = {}
  const parts = Array.isArray(p.part) ? (p.part as Record<string, unknown>[]) : []
  const before = issues.length
  for (const [j, part] of parts.entries()) {
    const where = `${at}.part[${j}]`
    switch (isObject(part) ? part.name : undefined) {
      case 'name':
        if (typeof part.valueString !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(part.valueString))
          issues.push({ path: `${where}.valueString`, message: 'view name must be letters, digits, _ . - (at most 100)' })
        else view.name = part.valueString
        break
      case 'viewResource':
        if (!isObject(part.resource)) issues.push({ path: `${where}.resource`, message: 'viewResource must be a ViewDefinition' })
        else view.viewResource = part.resource
        break
      case 'viewReference': {
        const id = viewReferenceId((part.valueReference as { reference?: unknown } | undefined)?.reference)
        if (id === undefined)
          issues.push({ path: `${where}.valueReference`, message: 'viewReference must be { reference: "ViewDefinition/<id>" }' })
        else view.viewReference = id
        break
      }
      default:
        issues.push({ path: `${where}.name`, message: 'a view part is name, viewResource or viewReference' })
    }
  }
  if ((view.viewResource === undefined) === (view.viewReference === undefined) && issues.length === before) {
    issues.push({ path: `${at}.part`, message: 'view needs exactly one of viewResource and viewReference' })
  }
  return issues.length === before ? view : undefined
}

/**
 * A parameter export shares with `$viewdefinition-run`, read by run's reader (with a placeholder
 * view, so only this parameter's problems come back), renamed to its place in this request.
 */
function sharedParameter(p: Record<string, unknown>, i: number, issues: FieldIssue[], request: ExportRequest) {
  try {
    const run = readRunParameters({
      resourceType: 'Parameters',
      parameter: [{ name: 'viewReference', valueReference: { reference: 'ViewDefinition/1' } }, p],
    })
    if (p.name === 'resource') {
      request.resources.push(...run.resources)
      request.hasResources = true
    }
    if (run.source !== undefined) request.source = run.source
    if (p.name === 'header') request.header = run.header
    if (run.patient !== undefined && !request.patients.includes(run.patient)) request.patients.push(run.patient)
    if (run.since !== undefined) request.since = run.since
  } catch (err) {
    const details = (err as { details?: unknown }).details
    for (const d of Array.isArray(details) ? (details as FieldIssue[]) : []) {
      // `_since` without a source is judged on the whole request, not here.
      if (d.path === 'parameter') continue
      issues.push({ path: d.path.replace(/^parameter\[1\]/, `parameter[${i}]`), message: d.message })
    }
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
