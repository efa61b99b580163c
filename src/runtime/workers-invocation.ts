import type { ExecutionContext } from '@cloudflare/workers-types/index.ts'
import type { Invocation } from '../modules/subscriptions/subscriptions.kick.ts'

/**
 * How long after its response an invocation's passes may send: workerd keeps `waitUntil` work
 * alive about 30 s after the response, and the last seconds are for giving the leases back.
 */
export const PASS_BUDGET_MS = 25_000

/** One fetch invocation as the deliveries after its commits see it (subscriptions.kick.ts). */
export interface TrackedInvocation extends Invocation {
  /** The deps' `waitUntil`: the invocation's background work, kept alive and tracked for `settled`. */
  defer(work: Promise<unknown>): void
  /** The handler has made its response. */
  answered(): void
}

/**
 * Tracks the background work one invocation hands to `waitUntil`, so a delivery pass starts after
 * the invocation's own writes, an async sync's included, and sees every event they committed.
 */
export function trackInvocation(execution: Pick<ExecutionContext, 'waitUntil'>, budgetMs = PASS_BUDGET_MS): TrackedInvocation {
  const pending = new Set<Promise<unknown>>()
  let answeredAt = 0
  let answer!: () => void
  const response = new Promise<void>((resolve) => {
    answer = resolve
  })
  return {
    defer(work) {
      const tracked = work.finally(() => pending.delete(tracked))
      pending.add(tracked)
      execution.waitUntil(tracked)
    },
    answered() {
      // A monotonic clock: the budget is elapsed time, whatever the wall clock (Date) says.
      answeredAt = performance.now()
      answer()
    },
    async settled() {
      await response
      // Work deferred meanwhile (a sync deferring a recompute) is waited for too.
      while (pending.size > 0) await Promise.allSettled([...pending])
      return AbortSignal.timeout(Math.max(0, Math.floor(answeredAt + budgetMs - performance.now())))
    },
    waitUntil: (work) => execution.waitUntil(work),
  }
}
