import type { FhirSubscriptionReport } from '../modules/datasources/datasources.fhir-report.ts'
import type { DeliveryReport } from '../modules/subscriptions/subscriptions.report.ts'
import type { TimeReport } from '../modules/work/work.time-report.ts'

export type { DeliveryReport, FhirSubscriptionReport, TimeReport }

/**
 * What one maintenance tick (the scheduler's step) did. A module of its own, importing only other
 * import-free report types, so the package's public declarations (src/index.ts) can name it without
 * reaching the database types.
 */
export interface MaintenanceReport {
  recovered: number
  /** Rows rewritten by recomputing panels left stale (a restart during a background recompute, Workers). */
  recomputed: number
  /** Published views ended at their publishConfig.expiresAt. */
  expired: number
  started: number
  succeeded: number
  failed: number
  /** Runs that handed the rest of their read to a later tick (a bulk export still in progress). */
  suspended: number
  skipped: number
  /** Access records deleted for being older than AUDIT_RETENTION_DAYS (bounded per step). */
  auditPruned: number
  /** Change-feed events deleted by EVENTS_RETENTION_DAYS / EVENTS_RETENTION_MAX (bounded per step). */
  eventsPruned: number
  /** Wrong view-password counts deleted because their window ended (views.password.ts). */
  passwordFailuresPruned: number
  /** Outbound webhook deliveries of this step (docs/live.md "Outbound webhooks"). */
  webhooks: DeliveryReport
  /** `$viewdefinition-export` jobs: slices run of jobs nobody ran, jobs removed (expired or cancelled) with their files. */
  exports: { resumed: number; removed: number }
  /** Expired claims freed, `row.overdue` appended, snoozes ended (docs/worklist.md "Time rules"). */
  time: TimeReport
  /** Live fhir sources: catch-ups run, upstream Subscriptions checked and made again. */
  fhirSubscriptions: FhirSubscriptionReport
}
