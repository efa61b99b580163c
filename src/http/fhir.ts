import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { AppError } from '../errors.ts'
import { sendJson } from './response-headers.ts'

/** The media type of every /fhir answer (FHIR R4 JSON). */
export const FHIR_JSON = 'application/fhir+json'

/** The FHIR `IssueType` code that best names an error of `status` (R4 valueset issue-type). */
function issueCode(err: AppError): string {
  switch (err.status) {
    case 400:
      if (err.code === 'TOO_COSTLY') return 'too-costly'
      return err.code === 'INVALID_JSON' ? 'structure' : 'invalid'
    case 401:
      return 'login'
    case 403:
      return 'forbidden'
    case 404:
      return 'not-found'
    case 409:
    case 412:
      return 'conflict'
    case 410:
      return 'deleted'
    case 413:
      return 'too-costly'
    case 415:
      return 'not-supported'
    case 429:
      return 'throttled'
    default:
      return err.status >= 500 ? 'exception' : 'processing'
  }
}

/**
 * An error as FHIR's `OperationOutcome` (the /fhir face answers errors this way, with the same HTTP
 * status as /api). The contract's code travels as `details.coding`, and each field `details` entry
 * (`{ path, message }`) becomes an issue whose `expression` names that field.
 */
export function operationOutcome(err: AppError, requestId?: string) {
  const code = issueCode(err)
  const severity = err.status >= 500 ? 'fatal' : 'error'
  const coding = [{ system: 'urn:panels:error-code', code: err.code, display: err.title }]
  const fields = Array.isArray(err.details)
    ? (err.details as unknown[]).filter(
        (d): d is { path: string; message: string } =>
          !!d && typeof d === 'object' && typeof (d as { path?: unknown }).path === 'string',
      )
    : []
  const issue =
    fields.length > 0
      ? fields.map((d) => ({
          severity,
          code,
          details: { coding, text: err.message },
          diagnostics: `${d.path}: ${d.message}`,
          expression: [d.path],
        }))
      : [{ severity, code, details: { coding, text: err.message }, diagnostics: err.message }]
  return {
    resourceType: 'OperationOutcome',
    ...(requestId ? { id: requestId } : {}),
    issue,
  }
}

/** True for a request of the FHIR face (`/fhir`, `/fhir/...`), relative to the mount point. */
export const isFhirPath = (path: string) => path === '/fhir' || path.startsWith('/fhir/')

/** A FHIR resource answer: the request's prepared headers and `application/fhir+json`. */
export const sendFhir = <T extends object, U extends ContentfulStatusCode>(c: Context, resource: T, status: U) =>
  sendJson(c, resource, status, FHIR_JSON)
