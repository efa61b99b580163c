import type { Logger } from './logger.ts'

/** What a piece of background work is, for the log lines about it. */
export interface BackgroundJob {
  what: string
  [field: string]: unknown
}

/**
 * Hands work that outlives its request to the runtime (`ServiceContext.defer`): an async sync,
 * a recompute after a column change, a scheduler step. Never throws and never rejects: a failure
 * of the work is logged with its job. Workers keep it alive with `waitUntil`; Node and Deno track
 * it and finish or hand it back when they stop.
 */
export type Defer = (work: Promise<unknown>, job: BackgroundJob) => void

/** How a stop went: work that finished, work that handed itself back, work still running. */
export interface SettleReport {
  finished: number
  handedBack: number
  abandoned: number
}

/** The tracker of a long-running process (Node, Deno, an embedding host). */
export interface BackgroundWork {
  defer: Defer
  /**
   * Aborted when a stop runs out of waiting time: long work (a sync, a recompute) then stops at
   * its next safe point and leaves what it did not finish for the next run to pick up.
   */
  stopping: AbortSignal
  /** Jobs deferred and not yet settled. */
  pending(): number
  /**
   * Waits up to `waitMs` for all deferred work, work deferred meanwhile included; then aborts
   * `stopping` and waits up to `graceMs` more for the rest to hand itself back.
   */
  settle(options: { waitMs: number; graceMs: number }): Promise<SettleReport>
}

/** A tracker of deferred work; `log` receives the failures of the work and the hand-back notice. */
export function trackBackgroundWork(log: Logger): BackgroundWork {
  const running = new Map<Promise<void>, BackgroundJob>()
  const stop = new AbortController()
  let settled = 0

  const defer: Defer = (work, job) => {
    const tracked: Promise<void> = work
      .then(
        () => undefined,
        (err) => log.error('background work failed', { ...job, error: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => {
        running.delete(tracked)
        settled++
      })
    running.set(tracked, job)
  }

  /** Resolves when nothing is running any more or after `ms`, whichever comes first. */
  async function drained(ms: number) {
    const until = Date.now() + ms
    while (running.size > 0) {
      const left = until - Date.now()
      if (left <= 0) return
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([
        Promise.allSettled([...running.keys()]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, left)
        }),
      ])
      clearTimeout(timer)
    }
  }

  return {
    defer,
    stopping: stop.signal,
    pending: () => running.size,
    async settle({ waitMs, graceMs }) {
      const before = settled
      await drained(waitMs)
      const finished = settled - before
      if (running.size === 0) return { finished, handedBack: 0, abandoned: 0 }
      log.warn('handing back background work', { count: running.size, jobs: [...running.values()].map((j) => j.what) })
      stop.abort(new Error('the service is stopping'))
      await drained(graceMs)
      return { finished, handedBack: settled - before - finished, abandoned: running.size }
    },
  }
}
