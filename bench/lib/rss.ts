/**
 * Peak memory of this process, per phase of a bench: `process.memoryUsage()` sampled every 20 ms
 * and at each phase boundary (`rss`, and the V8 heap in use), beside the kernel's high-water mark
 * of the resident set (`process.resourceUsage().maxRSS`), which also sees peaks inside long
 * synchronous calls (the native database client runs on this thread, so no timer fires while a
 * statement runs). The high-water mark is read at the end of every phase, so the phase that
 * raised it shows; so does the longest gap between two samples, the longest time the event loop
 * did not turn.
 */
export interface RssPhase {
  name: string
  /** Highest sampled `rss` during the phase, in bytes. */
  peak: number
  /** Highest sampled V8 heap in use during the phase, in bytes. */
  heapPeak: number
  /** The process's high-water mark of `rss` at the end of the phase, in bytes. */
  maxRssAfter: number
  /** The longest time between two samples (ms): how long the event loop was held at most. */
  longestGap: number
}

export function rssTracker(intervalMs = 20) {
  const phases: RssPhase[] = []
  const open = (name: string): RssPhase => {
    const { rss, heapUsed } = process.memoryUsage()
    return { name, peak: rss, heapPeak: heapUsed, maxRssAfter: 0, longestGap: 0 }
  }
  let last = performance.now()
  let current = open('modules loaded')
  const sample = () => {
    const now = performance.now()
    if (now - last > current.longestGap) current.longestGap = now - last
    last = now
    const { rss, heapUsed } = process.memoryUsage()
    if (rss > current.peak) current.peak = rss
    if (heapUsed > current.heapPeak) current.heapPeak = heapUsed
  }
  const close = () => {
    sample()
    current.maxRssAfter = maxRss()
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
