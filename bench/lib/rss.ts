/**
 * Peak memory of this process, per phase of a bench: `process.memoryUsage()` sampled every
 * `intervalMs` and at each phase boundary (`rss`, the V8 heap in use, and `external`: memory
 * outside the heap that V8 knows of, such as Buffers), beside the kernel's high-water mark of the
 * resident set (`process.resourceUsage().maxRSS`), which also sees peaks inside long synchronous
 * calls (the native database client runs on this thread, so no timer fires while a statement
 * runs). The high-water mark is read at the end of every phase, so the phase that raised it
 * shows; so does the longest gap between two samples, the longest time the event loop did not
 * turn. At the sample of a phase's highest `rss` the V8 heap (`heapTotal`, what V8 has reserved)
 * and `external` are kept too: what is left of that `rss` is native memory V8 does not see (the
 * code, SQLite's page cache and sorters, the libSQL client's statements).
 *
 * `liveHeap` (a diagnosis, in a process started with `--expose-gc`): a full collection at the end of
 * every phase, and the V8 heap still in use after it, so live data tells from garbage V8 has not
 * collected yet. The collections change what they measure (peaks come lower): not for the figures.
 */
export interface RssPhase {
  name: string
  /** How long the phase took, in seconds. */
  seconds: number
  /** Highest sampled `rss` during the phase, in bytes. */
  peak: number
  /** Highest sampled V8 heap in use during the phase, in bytes. */
  heapPeak: number
  /** Highest sampled `external` during the phase, in bytes. */
  externalPeak: number
  /** `heapTotal` and `external` at the sample of the highest `rss`, in bytes. */
  atPeak: { heapTotal: number; external: number }
  /** The process's high-water mark of `rss` at the end of the phase, in bytes. */
  maxRssAfter: number
  /** The longest time between two samples (ms): how long the event loop was held at most. */
  longestGap: number
  /** With `liveHeap`: the V8 heap in use after a full collection at the end of the phase, in bytes. */
  liveHeapAfter?: number
}

export function rssTracker(intervalMs = 20, { liveHeap = false } = {}) {
  const gc = (globalThis as { gc?: () => void }).gc
  if (liveHeap && !gc) throw new Error('the live heap needs a process started with --expose-gc')
  const phases: RssPhase[] = []
  let started = performance.now()
  const open = (name: string): RssPhase => {
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage()
    started = performance.now()
    return {
      name,
      seconds: 0,
      peak: rss,
      heapPeak: heapUsed,
      externalPeak: external,
      atPeak: { heapTotal, external },
      maxRssAfter: 0,
      longestGap: 0,
    }
  }
  let last = performance.now()
  let current = open('modules loaded')
  const sample = () => {
    const now = performance.now()
    if (now - last > current.longestGap) current.longestGap = now - last
    last = now
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage()
    if (rss > current.peak) {
      current.peak = rss
      current.atPeak = { heapTotal, external }
    }
    if (heapUsed > current.heapPeak) current.heapPeak = heapUsed
    if (external > current.externalPeak) current.externalPeak = external
  }
  const close = () => {
    sample()
    current.maxRssAfter = maxRss()
    if (liveHeap && gc) {
      gc()
      current.liveHeapAfter = process.memoryUsage().heapUsed
    }
    current.seconds = (performance.now() - started) / 1000
    phases.push(current)
  }
  const timer = setInterval(sample, intervalMs)
  timer.unref()
  return {
    /** Ends the current phase and starts `name`. */
    phase(name: string) {
      close()
      current = open(name)
    },
    /** Stops sampling; answers every phase and the process's high-water mark of `rss` (bytes). */
    stop(): { phases: RssPhase[]; maxRss: number } {
      close()
      clearInterval(timer)
      return { phases, maxRss: maxRss() }
    },
  }
}

const maxRss = () => process.resourceUsage().maxRSS * 1024

export const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`
