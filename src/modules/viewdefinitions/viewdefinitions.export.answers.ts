import { AppError, type ErrorCode } from '../../errors.ts'
import { exportProgress } from './viewdefinitions.export.service.ts'
import type { ExportJob } from './viewdefinitions.export-job.ts'

/**
 * What the export's URLs answer (docs/fhir.md "ViewDefinition export"): the kick-off and a poll of a
 * running job as the SQL-on-FHIR `Parameters` of the operation's output (exportId, status, location,
 * …), the completed job as a Bulk Data style manifest, a failed job as its error.
 */

type ExportStatusCode = 'accepted' | 'in-progress'

/** The operation's output `Parameters` for a job that has not ended. */
export function exportState(job: ExportJob, location: string, status: ExportStatusCode) {
  const parameter: Record<string, unknown>[] = [
    { name: 'exportId', valueString: job.id },
    ...(job.params.clientTrackingId ? [{ name: 'clientTrackingId', valueString: job.params.clientTrackingId }] : []),
    { name: 'status', valueCode: status },
    { name: 'location', valueUri: location },
    { name: '_format', valueCode: job.params.format },
    { name: 'exportStartTime', valueInstant: job.createdAt },
  ]
  if (status === 'in-progress') {
    parameter.push({
      name: 'extension',
      extension: [{ url: 'progress', valueString: exportProgress(job).text }],
    })
  }
  return { resourceType: 'Parameters', parameter }
}

/**
 * The completed job's manifest: `transactionTime` (the kick-off), `request`, `requiresAccessToken`,
 * one `output` per view (its name, resource type, format, row count and download URL, in the order
 * of the request's views), and an empty `error`.
 */
export function exportManifest(job: ExportJob, location: string) {
  const format = job.params.format
  return {
    transactionTime: job.createdAt,
    request: job.request,
    requiresAccessToken: true,
    exportId: job.id,
    ...(job.params.clientTrackingId ? { clientTrackingId: job.params.clientTrackingId } : {}),
    status: 'completed',
    exportStartTime: job.createdAt,
    exportEndTime: job.finishedAt,
    output: job.views.map((view, i) => ({
      name: view.name,
      type: view.resource,
      format,
      count: view.rows,
      url: `${location}/${i}.${format}`,
    })),
    error: [],
  }
}

/** A failed job's error, to throw: rendered as the contract's body on /api, an OperationOutcome on /fhir. */
export function failure(job: ExportJob): AppError {
  const stored = parse(job.error)
  return new AppError(stored.code as ErrorCode, stored.message, stored.details ?? null)
}

// --- Internal helpers ---

function parse(text: string | null): { code: string; message: string; details?: unknown } {
  try {
    const value = JSON.parse(text ?? '')
    if (value && typeof value.code === 'string' && typeof value.message === 'string') return value
  } catch {}
  return { code: 'INTERNAL_ERROR', message: `The export failed: ${text ?? 'no error was recorded'}` }
}
