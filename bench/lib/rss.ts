/**
 * Peak resident memory of this process, per phase of a bench: `process.memoryUsage().rss` sampled
 * every 20 ms and at each phase boundary, beside the kernel's high-water mark
 * (`process.resourceUsage().maxRSS`), which also sees peaks inside long synchronous calls (the
 * native database client runs on this thread, so no timer fires while a statement runs).
 */
export interface RssPhase {
  name: string
  /** Highest sampled `rss` during the phase, in bytes. */
  peak: number
}

export function rssTracker(intervalMs = 20) {
  const phases: RssPhase[] = []
  let current: RssPhase = { name: 'start', peak: process.memoryUsage().rss }
  const sample = () => {
    const rss = process.memoryUsage().rss
    if (rss > current.peak) current.peak = rss
  }
  const timer = setInterval(sample, intervalMs)
  timer.unref()
  return {
    /** Ends the current phase and starts `name`. */
    phase(name: string) {
      sample()
      phases.push(current)
      current = { name, peak: process.memoryUsage().rss }
    },
    /** Stops sampling; answers every phase's sampled peak and the process's high-water mark (bytes). */
    stop(): { phases: RssPhase[]; sampledPeak: number; maxRss: number } {
      sample()
      clearInterval(timer)
      const all = [...phases, current]
      return {
        phases: all,
        sampledPeak: Math.max(...all.map((p) => p.peak)),
        maxRss: process.resourceUsage().maxRSS * 1024,
      }
    },
  }
}

export const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`
