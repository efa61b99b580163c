/**
 * Wake-ups of the change feed's readers after a commit (LIVE.md "Reading the log"). The log in the
 * database is the only source of truth: a wake-up only tells a stream to read it now, so a lost
 * one delays an event and never loses it. A writer calls `committed(tenantId)` after a batch that
 * appended events; streams `listen` for their tenant, and the outbound webhook deliveries follow
 * the commits too (src/modules/subscriptions/subscriptions.kick.ts).
 */
export interface LiveBus {
  committed(tenantId: string): void
  /** Calls `wake` after each commit of the tenant's events; answers the unsubscribe function. */
  listen(tenantId: string, wake: () => void): () => void
  /**
   * Calls `wake` with the tenant after each commit of any tenant's events: for followers that
   * cannot know their tenants beforehand (the deliveries after a Workers request's commits).
   */
  listenAll(wake: (tenantId: string) => void): () => void
  /** Aborted by `close()`: open event streams end with it (a stop ends them first; docs/live.md). */
  readonly closed: AbortSignal
  close(): Promise<void>
}

/** The bus of one process: wakes the streams of this process only. */
export function createLocalBus(): LiveBus {
  const listeners = new Map<string, Set<() => void>>()
  const everyTenant = new Set<(tenantId: string) => void>()
  const closing = new AbortController()
  return {
    closed: closing.signal,
    committed(tenantId) {
      for (const wake of listeners.get(tenantId) ?? []) safely(wake, tenantId)
      for (const wake of everyTenant) safely(wake, tenantId)
    },
    listen(tenantId, wake) {
      let set = listeners.get(tenantId)
      if (!set) {
        set = new Set()
        listeners.set(tenantId, set)
      }
      set.add(wake)
      return () => {
        set.delete(wake)
        if (set.size === 0) listeners.delete(tenantId)
      }
    },
    listenAll(wake) {
      everyTenant.add(wake)
      return () => {
        everyTenant.delete(wake)
      }
    },
    async close() {
      closing.abort()
      listeners.clear()
      everyTenant.clear()
    },
  }
}

function safely(wake: (tenantId: string) => void, tenantId: string) {
  try {
    wake(tenantId)
  } catch {
    // A listener's failure is its own; the others still wake.
  }
}
