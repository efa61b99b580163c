import type { Deps } from '../deps.ts'
import { recoverInterruptedSyncs } from '../modules/datasources/datasources.sync.ts'
import { runDueSyncs } from '../scheduler/run-due-syncs.ts'

/**
 * The interval scheduler of long-running processes (Node, Deno): crash recovery once at start-up,
 * then `runDueSyncs` every SYNC_INTERVAL_SECONDS, never two steps at once. A file database belongs
 * to this one process, so every source it finds in `syncing` was interrupted; with a shared remote
 * database only expired leases are recovered. `stop()` waits for the running step.
 */
export function startScheduler(deps: Deps) {
  const localDb = deps.config.databaseUrl.startsWith('file:') || deps.config.databaseUrl === ':memory:'
  let running: Promise<unknown> = recoverInterruptedSyncs(deps.db, deps.clock.now(), localDb)
    .then((n) => n > 0 && deps.log.warn('marked interrupted synchronisations as failed', { count: n }))
    .catch((err) => deps.log.error('sync recovery failed', { error: (err as Error)?.message }))
  if (!deps.config.syncScheduler) return { stop: () => running }
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    running = runDueSyncs(deps)
      .then((r) => r.started + r.recovered + r.recomputed > 0 && deps.log.info('scheduler step', { ...r }))
      .catch((err) => deps.log.error('scheduler step failed', { error: (err as Error)?.message }))
      .finally(() => {
        busy = false
      })
  }, deps.config.syncIntervalSeconds * 1000)
  timer.unref?.()
  return {
    stop: async () => {
      clearInterval(timer)
      await running
    },
  }
}
