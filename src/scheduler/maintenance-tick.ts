import { and, asc, lte, or, sql } from 'drizzle-orm'
import { systemContext } from '../context.ts'
import { dataSources, panels } from '../db/schema.ts'
import type { Deps } from '../deps.ts'
import { isConflict } from '../errors.ts'
import { pruneAccessRecords } from '../modules/audit/audit.service.ts'
import { checkFhirSubscriptions } from '../modules/datasources/datasources.fhir-check.ts'
import { runSync } from '../modules/datasources/datasources.sync.ts'
import { holdsSuspendedRun, leaseFree, recoverInterruptedSyncs } from '../modules/datasources/datasources.sync-lease.ts'
import { pruneEvents } from '../modules/events/events.retention.ts'
import { pruneFhirTopicEvents } from '../modules/fhir/fhir.topic.retention.ts'
import { queueFhirHeartbeats } from '../modules/fhir-topic/fhir.topic.delivery.ts'
import { deliverDueWebhooks } from '../modules/subscriptions/subscriptions.queue.ts'
import { runExportMaintenance } from '../modules/viewdefinitions/viewdefinitions.export.service.ts'
import { expireDuePublications } from '../modules/views/views.expiry.ts'
import { pruneViewPasswordFailures } from '../modules/views/views.password.ts'
import { runTimeStep } from '../modules/work/work.time.ts'
import { recomputeStalePanels } from '../rowstore/recompute.ts'
import type { MaintenanceReport } from './maintenance-report.ts'

export type { MaintenanceReport }

/**
 * The maintenance tick: the scheduler's one step, shared by the interval loop (Node, Deno) and the
 * cron trigger (Workers). Its ten jobs, in order: applies what time changed of the work state
 * (expired claims freed, `row.overdue`, ended snoozes: docs/worklist.md "Time rules"), first, so no
 * long sync holds it back; sends the outbound webhook deliveries that are due (the time step's
 * events among them, and the heartbeats of FHIR topic subscriptions, queued just before); recovers
 * syncs whose lease ran out; runs the sources whose `nextSyncAt` is due and resumes suspended runs
 * whose time has come (a bulk export across ticks), one after another, oldest first, at most
 * `limit` per call; runs the catch-ups live fhir sources owe and checks their upstream
 * Subscriptions that went quiet (datasources.fhir-check.ts); recomputes panels left stale; carries
 * on `$viewdefinition-export` jobs nobody runs and removes expired or cancelled ones with their
 * files; ends publications past their expiry; deletes expired access records and change-feed
 * events (a bounded batch per step; then the FHIR topic event numbers of the events gone), and the
 * wrong-password counts of views whose window has ended. A source another runner holds is skipped
 * (its lease decides). Sources of deleted panels are never run.
 */
export async function runMaintenanceTick(deps: Deps, now: Date = deps.clock.now(), limit = 20): Promise<MaintenanceReport> {
  const report: MaintenanceReport = {
    recovered: 0,
    recomputed: 0,
    expired: 0,
    started: 0,
    succeeded: 0,
    failed: 0,
    suspended: 0,
    skipped: 0,
    auditPruned: 0,
    eventsPruned: 0,
    passwordFailuresPruned: 0,
    webhooks: { subscriptions: 0, delivered: 0, retried: 0, failed: 0, disabled: 0, pruned: 0 },
    time: { panels: 0, freed: 0, overdue: 0, woken: 0 },
    exports: { resumed: 0, removed: 0 },
    fhirSubscriptions: { caughtUp: 0, checked: 0, remade: 0, removed: 0 },
  }
  report.time = await runTimeStep(deps, now)
  // Deliveries next: they are bounded per step and waiting for them, while syncs are not. The FHIR
  // topic subscriptions' due heartbeats join their queues first, so this step sends them.
  await queueFhirHeartbeats(deps, now)
  report.webhooks = await deliverDueWebhooks(deps, { now })
  report.recovered = await recoverInterruptedSyncs(deps.db, now)
  const at = now.toISOString()
  const due = await deps.db
    .select()
    .from(dataSources)
    .where(
      and(
        // Due, or holding a suspended run whose resume time has come (a bulk export across ticks).
        or(lte(dataSources.nextSyncAt, at), holdsSuspendedRun),
        leaseFree(at),
        sql`EXISTS (SELECT 1 FROM ${panels} p WHERE p.id = ${dataSources.panelId} AND p.deleted_at IS NULL)`,
      ),
    )
    .orderBy(asc(dataSources.nextSyncAt))
    .limit(limit)
  for (const source of due) {
    // A stopping service starts no further sync; the ones left stay due for the next step.
    if (deps.stopping?.aborted) break
    try {
      const outcome = await runSync(systemContext(deps, source.tenantId), source, 'schedule')
      report.started++
      if (outcome.source.syncStatus === 'success') report.succeeded++
      else if (outcome.run.status === 'syncing') report.suspended++
      else report.failed++
    } catch (err) {
      if (isConflict(err)) report.skipped++
      else {
        report.failed++
        deps.log.error('scheduled sync failed', { dataSourceId: source.id, error: (err as Error)?.message })
      }
    }
  }
  report.fhirSubscriptions = await checkFhirSubscriptions(deps, now)
  report.recomputed = await recomputeStalePanels(deps)
  report.exports = await runExportMaintenance(deps, now)
  report.expired = await expireDuePublications((tenantId) => systemContext(deps, tenantId), deps.db, now)
  report.auditPruned = await pruneAccessRecords(deps, now)
  report.eventsPruned = await pruneEvents(deps, now)
  await pruneFhirTopicEvents(deps)
  report.passwordFailuresPruned = await pruneViewPasswordFailures(deps.db, now)
  return report
}
