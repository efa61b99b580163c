/**
 * Wake-ups of the change feed's readers after a commit (LIVE.md "Reading the log"). The log in the
 * database is the only source of truth: a wake-up only tells a stream to read it now, so a lost
 * one delays an event and never loses it. A writer calls `committed(tenantId)` after a batch that
 * appended events; streams `listen` for their tenant.
 */
export interface LiveBus {
  committed(tenantId: string): void
  /** Calls `wake` after each commit of the tenant's events; answers the unsubscribe function. */
  listen(tenantId: string, wake: () => void): () => void
  close(): Promise<void>
}

/** The bus of one process: wakes the streams of this process only. */
export function createLocalBus(): LiveBus {
  const listeners = new Map<string, Set<() => void>>()
  return {
    committed(tenantId) {
      for (const wake of listeners.get(tenantId) ?? []) wake()
    },
    listen(tenantId, wake) {
      const set = listeners.get(tenantId) ?? new Set<() => void>()
      listeners.set(tenantId, set)
      set.add(wake)
      return () => {
        set.delete(wake)
        if (set.size === 0) listeners.delete(tenantId)
      }
    },
    async close() {
      listeners.clear()
    },
  }
}
