/* A module without imports: the maintenance report (src/scheduler/maintenance-report.ts) and the public declarations name it. */

/** What the time step did (docs/worklist.md "Time rules"; work.time.ts). */
export interface TimeReport {
  /** Panels with something due. */
  panels: number
  /** Claims whose lease ran out, freed (`row.work_updated`, cause `lease_expired`). */
  freed: number
  /** `row.overdue` events appended. */
  overdue: number
  /** Snoozes that ended, applied to the views. */
  woken: number
}
