import type { Deps } from '../deps.ts'
import { recoverInterruptedSyncs } from '../modules/datasources/datasources.sync-lease.ts'
import { watchSubscribedTenants } from '../modules/subscriptions/subscriptions.kick.ts'
import { runTimeStep } from '../modules/work/work.time.ts'
import { runMaintenanceTick } from '../scheduler/maintenance-tick.ts'

/**
 * The interval scheduler of long-running processes (Node, Deno): crash recovery once at start-up,
 * then `runMaintenanceTick` every SYNC_INTERVAL_SECONDS, never two steps at once. While a step outlasts
 * the interval (a long sync), each interval still runs the time step alone (work.time.ts), so
 * claims, due dates and snoozes are applied at most one interval late. A file database belongs
 * to this one process, so every source it finds in `syncing` was interrupted; with a shared remote
 * database only expired leases are recovered. Each step is background work (`deps.defer`), so a
 * stop finishes or hands it back with the rest (`deps.close()`); `stop()` only ends the interval.
 */
export function startScheduler(deps: Deps) {
  const localDb = deps.config.databaseUrl.startsWith('file:') || deps.config.databaseUrl === ':memory:'
  deps.defer(
    recoverInterruptedSyncs(deps.db, deps.clock.now(), localDb).then(
      (n) => n > 0 && deps.log.warn('marked interrupted synchronisations as failed', { count: n }),
    ),
    { what: 'sync recovery' },
  )
  // Deliveries right after a commit of this process, for tenants with subscriptions (docs/live.md).
  deps.defer(watchSubscribedTenants(deps), { what: 'webhook watch' })
  if (!deps.config.syncScheduler) return { stop: () => {} }
  let busy = false
  let timeBusy = false
  const timer = setInterval(() => {
    if (busy) {
      if (timeBusy) return
      timeBusy = true
      const time = runTimeStep(deps).finally(() => {
        timeBusy = false
      })
      deps.defer(time, { what: 'scheduler step' })
      return
    }
    busy = true
    const step = runMaintenanceTick(deps)
      .then(async (r) => {
        await watchSubscribedTenants(deps)
        return r
      })
      .then(
        (r) =>
          r.started + r.recovered + r.recomputed + r.webhooks.subscriptions + r.time.panels > 0 &&
          deps.log.info('scheduler step', { ...r }),
      )
      .finally(() => {
        busy = false
      })
    deps.defer(step, { what: 'scheduler step' })
  }, deps.config.syncIntervalSeconds * 1000)
  timer.unref?.()
  return {
    stop: () => clearInterval(timer),
  }
}
