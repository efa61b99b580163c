/** Machine-readable error codes (CONTRACT.md "Errors"). */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'FORMULA_ERROR'
  | 'INVALID_VIEW_DEFINITION'
  | 'INVALID_JSON'
  | 'UNAUTHORIZED'
  | 'TOKEN_EXPIRED'
  | 'TOKEN_INVALID'
  | 'TENANT_ACCESS_DENIED'
  | 'USER_ACCESS_DENIED'
  | 'FORBIDDEN'
  | 'VIEW_PASSWORD_REQUIRED'
  | 'VIEW_PASSWORD_INVALID'
  | 'COMMENTS_DISABLED'
  | 'PRECONDITION_FAILED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'CURSOR_EXPIRED'
  | 'PAYLOAD_TOO_LARGE'
  | 'TOO_COSTLY'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'INTERNAL_ERROR'
  | 'SERVICE_UNAVAILABLE'

const STATUS: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  FORMULA_ERROR: 400,
  INVALID_VIEW_DEFINITION: 400,
  INVALID_JSON: 400,
  UNAUTHORIZED: 401,
  TOKEN_EXPIRED: 401,
  TOKEN_INVALID: 401,
  TENANT_ACCESS_DENIED: 403,
  USER_ACCESS_DENIED: 403,
  FORBIDDEN: 403,
  VIEW_PASSWORD_REQUIRED: 403,
  VIEW_PASSWORD_INVALID: 403,
  COMMENTS_DISABLED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PRECONDITION_FAILED: 412,
  CURSOR_EXPIRED: 410,
  PAYLOAD_TOO_LARGE: 413,
  TOO_COSTLY: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
}

const TITLE: Partial<Record<ErrorCode, string>> = {
  VALIDATION_ERROR: 'Validation Error',
  FORMULA_ERROR: 'Validation Error',
  INVALID_VIEW_DEFINITION: 'Validation Error',
  INVALID_JSON: 'Validation Error',
  UNAUTHORIZED: 'Unauthorized',
  TOKEN_EXPIRED: 'Unauthorized',
  TOKEN_INVALID: 'Unauthorized',
  TENANT_ACCESS_DENIED: 'Access denied to tenant',
  USER_ACCESS_DENIED: 'Access denied to user',
  FORBIDDEN: 'Forbidden',
  VIEW_PASSWORD_REQUIRED: 'Forbidden',
  VIEW_PASSWORD_INVALID: 'Forbidden',
  COMMENTS_DISABLED: 'Forbidden',
  PRECONDITION_FAILED: 'Precondition Failed',
  CONFLICT: 'Conflict',
  CURSOR_EXPIRED: 'Gone',
  PAYLOAD_TOO_LARGE: 'Payload Too Large',
  TOO_COSTLY: 'Too Costly',
  UNSUPPORTED_MEDIA_TYPE: 'Unsupported Media Type',
  RATE_LIMITED: 'Too Many Requests',
  INTERNAL_ERROR: 'Internal Server Error',
  SERVICE_UNAVAILABLE: 'Service Unavailable',
}

export interface FieldIssue {
  path: string
  message: string
}

export type ZodIssueLike = { path: PropertyKey[]; message: string }

/** zod issues → `details: [{ path, message }]` with dotted paths (`config.columns.0`). */
export function issuesToDetails(issues: readonly ZodIssueLike[], prefix?: string): FieldIssue[] {
  return issues.map((i) => ({
    path: [prefix, ...i.path.map(String)].filter((p) => p !== undefined && p !== '').join('.') || '(root)',
    message: i.message,
  }))
}

/** The one error type services throw; `http/errors.ts` renders it into the contract's body. */
export class AppError extends Error {
  readonly status: number
  readonly title: string
  /** Extra response headers (Retry-After, RateLimit-*, WWW-Authenticate). */
  readonly headers: Record<string, string> = {}

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: unknown = null,
    title?: string,
  ) {
    super(message)
    this.name = 'AppError'
    this.status = STATUS[code]
    this.title = title ?? TITLE[code] ?? 'Error'
  }
}

export type ResourceKind =
  | 'Panel'
  | 'Data source'
  | 'Column'
  | 'View'
  | 'ViewDefinition'
  | 'Notification'
  | 'Sync run'
  | 'Subscription'
  | 'Row'
  | 'Comment'
  | 'Route'

/** 404 whose message names the kind, the id and the tenant (spec §7). */
export const notFound = (kind: ResourceKind, id: string | number, tenantId: string) =>
  new AppError('NOT_FOUND', `${kind} ${id} not found for tenant ${tenantId}`, null, `${kind} not found`)

export const invalid = (details: FieldIssue[], message = 'Request validation failed') =>
  new AppError('VALIDATION_ERROR', message, details)

export const tenantDenied = () => new AppError('TENANT_ACCESS_DENIED', 'The token does not grant access to this tenant')

export const userDenied = () => new AppError('USER_ACCESS_DENIED', 'The token does not grant access to this user')

export const forbidden = (message: string) => new AppError('FORBIDDEN', message)

/** A 403 naming the view permission the caller lacks (issue 12; docs/view-sharing.md). */
export const permissionDenied = (permission: string, doing: string) =>
  new AppError('FORBIDDEN', `The view's publish settings do not give you the "${permission}" permission (${doing})`, {
    permission,
  })

export const preconditionFailed = (message: string, details: unknown = null) =>
  new AppError('PRECONDITION_FAILED', message, details)

export const commentsDisabled = (message: string) => new AppError('COMMENTS_DISABLED', message)

export const conflict = (message: string, details: unknown = null) => new AppError('CONFLICT', message, details)

export const unauthorized = (code: 'UNAUTHORIZED' | 'TOKEN_EXPIRED' | 'TOKEN_INVALID', message: string) =>
  new AppError(code, message)

export const formulaError = (errors: unknown[], message = 'Formula is invalid') => new AppError('FORMULA_ERROR', message, errors)

/**
 * 400 INVALID_VIEW_DEFINITION with every issue the SQL-on-FHIR engine found, each path under `at`
 * (the request field that carried the view; empty for the view itself).
 */
export const invalidViewDefinition = (issues: readonly FieldIssue[], at = '') =>
  new AppError(
    'INVALID_VIEW_DEFINITION',
    'The ViewDefinition is invalid',
    issues.map((i) => ({ path: at && i.path ? `${at}.${i.path}` : at || i.path, message: i.message })),
  )

export const tooLarge = (message: string) => new AppError('PAYLOAD_TOO_LARGE', message)

/** 400: the answer asked for is larger than the service gives at once; the message says how to ask in parts. */
export const tooCostly = (message: string, details: unknown = null) => new AppError('TOO_COSTLY', message, details)

/** The process is stopping (docs/operations.md): nothing was done; retry, on another instance or later. */
export function stopping(): AppError {
  const err = new AppError('SERVICE_UNAVAILABLE', 'The service is restarting; nothing was done, retry the request')
  err.headers['Retry-After'] = '1'
  return err
}

/** True for the 409 a held sync lease (or another conflict) answers. */
export const isConflict = (err: unknown): err is AppError => err instanceof AppError && err.code === 'CONFLICT'
