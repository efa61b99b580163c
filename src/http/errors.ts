import type { Context, ErrorHandler, NotFoundHandler } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { ZodError } from 'zod'
import { AppError, issuesToDetails, type ZodIssueLike } from '../errors.ts'
import { pathForLog } from './access-log.ts'
import { type AppEnv, appPath } from './context.ts'
import { FHIR_JSON, isFhirPath, operationOutcome } from './fhir.ts'

/**
 * The contract's error body for `err` (CONTRACT: Errors), without logging. Under /fhir the same
 * error is an `OperationOutcome` (application/fhir+json) with the same status and headers.
 */
export function render(c: Context<AppEnv>, err: AppError) {
  // The face's guard marks its requests (inside its router the path is relative to the router);
  // a request it never saw (an unknown route) is told by its path.
  if (c.get('fhirFace') || isFhirPath(appPath(c))) {
    return c.body(JSON.stringify(operationOutcome(err, c.get('requestId'))), err.status as 400, {
      ...err.headers,
      'Content-Type': FHIR_JSON,
    })
  }
  const body = {
    error: err.title,
    statusCode: err.status,
    message: err.message,
    code: err.code,
    details: err.details ?? null,
    timestamp: new Date().toISOString(),
    requestId: c.get('requestId'),
  }
  return c.json(body, err.status as 400, err.headers)
}

function fromHttpException(err: HTTPException): AppError {
  switch (err.status) {
    case 400:
      return /json/i.test(err.message)
        ? new AppError('INVALID_JSON', 'The request body is not valid JSON')
        : new AppError('VALIDATION_ERROR', err.message || 'Bad request')
    case 401:
      return new AppError('UNAUTHORIZED', err.message || 'Authentication required')
    case 413:
      return new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large')
    case 415:
      return new AppError('UNSUPPORTED_MEDIA_TYPE', err.message || 'Unsupported media type')
    default:
      return err.status >= 500
        ? new AppError('INTERNAL_ERROR', 'An unexpected error occurred')
        : new AppError('VALIDATION_ERROR', err.message || 'Bad request')
  }
}

/** The single error renderer (CONTRACT: Errors); 5xx never reveal internals. */
export const onError: ErrorHandler<AppEnv> = (err, c) => {
  let appErr: AppError
  if (err instanceof AppError) appErr = err
  else if (err instanceof HTTPException) appErr = fromHttpException(err)
  else if (err instanceof ZodError)
    appErr = new AppError('VALIDATION_ERROR', 'Request validation failed', issuesToDetails(err.issues))
  else appErr = new AppError('INTERNAL_ERROR', 'An unexpected error occurred')
  if (appErr.status >= 500 && appErr !== err) {
    c.get('deps')?.log.error('request failed', {
      requestId: c.get('requestId'),
      method: c.req.method,
      path: pathForLog(c.req.path),
      error: err instanceof Error ? err.message : String(err),
      stack: err instanceof Error ? err.stack : undefined,
    })
  }
  return render(c, appErr)
}

export const notFound: NotFoundHandler<AppEnv> = (c) =>
  render(c, new AppError('NOT_FOUND', `Route ${c.req.method} ${c.req.path} not found`, null, 'Route not found'))

/** zod-openapi's hook: a failed validation is a 400 naming each field (not stoker's 422). */
export const defaultHook = (
  result: { success: true } | { success: false; error: { issues: readonly ZodIssueLike[] }; target?: string },
) => {
  if (result.success) return
  const prefix = result.target === 'json' || result.target === 'param' ? undefined : result.target
  throw new AppError('VALIDATION_ERROR', 'Request validation failed', issuesToDetails(result.error.issues, prefix))
}
