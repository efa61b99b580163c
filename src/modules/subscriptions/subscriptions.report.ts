/* A module without imports: the maintenance report (src/scheduler/maintenance-report.ts) and the public declarations name it. */

/** Outbound webhook deliveries of one step (docs/live.md "Outbound webhooks"; subscriptions.queue.ts). */
export interface DeliveryReport {
  /** Subscriptions whose lease this step took. */
  subscriptions: number
  delivered: number
  /** Attempts that failed and will be tried again. */
  retried: number
  /** Deliveries that used their last attempt. */
  failed: number
  /** Subscriptions disabled after WEBHOOK_DISABLE_AFTER failed deliveries in a row. */
  disabled: number
  /** Finished deliveries older than HISTORY_DAYS deleted. */
  pruned: number
}
