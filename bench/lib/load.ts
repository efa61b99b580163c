import autocannon, { type Instance } from 'autocannon'

export interface LoadCase {
  url: string
  method?: 'GET' | 'POST'
  headers?: Record<string, string>
  body?: string
}

export interface LoadResult {
  rps: number
  p50: number
  p99: number
  requests: number
  /** Non-2xx answers, socket errors and timeouts: any of them fails the case. */
  failures: number
}

const running = new Set<Instance>()

/** Stops every load still running (on error or Ctrl-C). */
export const stopAllLoads = () => {
  for (const i of running) i.stop()
}

/**
 * One autocannon run. Latency percentiles are computed here from autocannon's per-response
 * timings (float ms): its own histogram has 1 ms resolution, too coarse for a 0.1 ms bare route.
 */
export function load(c: LoadCase, seconds: number, connections = 10): Promise<LoadResult> {
  let times = new Float64Array(1 << 20)
  let n = 0
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url: c.url, method: c.method ?? 'GET', headers: c.headers, body: c.body, connections, duration: seconds, timeout: 10 },
      (err, r) => {
        running.delete(instance)
        if (err) return reject(err)
        const sorted = times.subarray(0, n).sort()
        const pct = (p: number) => (n === 0 ? Number.NaN : sorted[Math.min(n - 1, Math.floor((p / 100) * n))])
        resolve({
          rps: r.requests.total / r.duration,
          p50: pct(50),
          p99: pct(99),
          requests: r.requests.total,
          failures: r.non2xx + r.errors + r.timeouts,
        })
      },
    )
    running.add(instance)
    instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
      if (n === times.length) {
        const bigger = new Float64Array(times.length * 2)
        bigger.set(times)
        times = bigger
      }
      times[n++] = ms
    })
  })
}
