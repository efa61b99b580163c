import type { RateLimitRule } from '../config.ts'
import { AppError } from '../errors.ts'

interface Window {
  count: number
  resetAt: number
}

/**
 * Fixed-window counters kept in this process (CONTRACT: per tenant and per IP). A multi-instance
 * deployment gets per-instance limits; docs/decisions.md says why that is acceptable here.
 */
export function createRateLimiter(now: () => number) {
  const windows = new Map<string, Window>()
  let lastSweep = 0

  function sweep(t: number) {
    if (t - lastSweep < 60_000) return
    lastSweep = t
    for (const [k, w] of windows) if (w.resetAt <= t) windows.delete(k)
  }

  /** Counts one hit on `key`; returns the headers to send, and throws 429 past the limit. */
  function hit(key: string, rule: RateLimitRule) {
    const t = now()
    sweep(t)
    let w = windows.get(key)
    if (!w || w.resetAt <= t) {
      w = { count: 0, resetAt: t + rule.windowSeconds * 1000 }
      windows.set(key, w)
    }
    w.count++
    const resetSeconds = Math.max(0, Math.ceil((w.resetAt - t) / 1000))
    const headers: Record<string, string> = {
      'RateLimit-Limit': String(rule.limit),
      'RateLimit-Remaining': String(Math.max(0, rule.limit - w.count)),
      'RateLimit-Reset': String(resetSeconds),
      'RateLimit-Policy': `${rule.limit};w=${rule.windowSeconds}`,
    }
    if (w.count > rule.limit) {
      const err = new AppError('RATE_LIMITED', `Rate limit of ${rule.limit} requests per ${rule.windowSeconds} s exceeded`)
      Object.assign(err.headers, headers, { 'Retry-After': String(resetSeconds) })
      throw err
    }
    return headers
  }

  return { hit }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>
