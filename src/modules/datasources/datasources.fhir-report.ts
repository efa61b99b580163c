/**
 * What the maintenance tick did for live fhir sources (datasources.fhir-check.ts). A module of its
 * own, without imports, so the tick's report type (src/scheduler/maintenance-report.ts), which the
 * package's public declarations name, reaches no database type.
 */
export interface FhirSubscriptionReport {
  /** Catch-up searches run (owed by a gap, a restart, an error status, a busy source). */
  caughtUp: number
  /** Upstream Subscriptions read because no notification came for two heartbeat periods. */
  checked: number
  /** Upstream Subscriptions made again (dropped by the server, or never made). */
  remade: number
  /** Upstream Subscriptions deleted because their source's panel was deleted. */
  removed: number
}
