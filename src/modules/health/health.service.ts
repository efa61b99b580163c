import { sql } from 'drizzle-orm'
import type { Deps } from '../../deps.ts'
import { isoNow } from '../../lib/clock.ts'
import type { HealthReportDto } from './health.schemas.ts'

/** How long one dependency check may take before it counts as down. */
export const HEALTH_CHECK_TIMEOUT_MS = 2000

export interface HealthResult {
  httpStatus: 200 | 503
  report: HealthReportDto
}

/**
 * The health report of `GET /health` (spec §4.6; CONTRACT: Health). The database (`SELECT 1`)
 * and the cache (a set/remove round trip) are checked in parallel, each bounded by `timeoutMs`
 * so a hung dependency cannot hang the probe. A failing cache degrades (200); a failing database
 * makes the service unhealthy (503). The memory cache reports `not_configured` when it answers.
 */
export async function checkHealth(deps: Deps, timeoutMs = HEALTH_CHECK_TIMEOUT_MS): Promise<HealthResult> {
  const [database, cache] = await Promise.all([
    probe(deps, 'database', () => deps.db.run(sql`SELECT 1`), timeoutMs),
    probe(deps, 'cache', () => deps.cache.ping(), timeoutMs),
  ])
  const driver = deps.config.cacheDriver
  const redisStatus = !cache.ok ? 'down' : driver === 'memory' ? 'not_configured' : 'up'
  const status = !database.ok ? 'unhealthy' : !cache.ok ? 'degraded' : 'healthy'
  const now = deps.clock.now().getTime()
  return {
    httpStatus: database.ok ? 200 : 503,
    report: {
      status,
      timestamp: isoNow(deps.clock),
      uptime: Math.max(0, (now - deps.startedAt) / 1000),
      database: { status: database.ok ? 'up' : 'down', latencyMs: database.latencyMs },
      redis: { status: redisStatus, driver },
    },
  }
}

interface ProbeResult {
  ok: boolean
  latencyMs: number
}

/** Runs one check with a deadline; failures are logged (never answered: they may name internals). */
async function probe(deps: Deps, name: string, check: () => Promise<unknown>, timeoutMs: number): Promise<ProbeResult> {
  const started = performance.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name} check timed out after ${timeoutMs} ms`)), timeoutMs)
  })
  try {
    await Promise.race([check(), deadline])
    return { ok: true, latencyMs: elapsed(started) }
  } catch (err) {
    deps.log.warn('health check failed', { check: name, error: err instanceof Error ? err.message : String(err) })
    return { ok: false, latencyMs: elapsed(started) }
  } finally {
    clearTimeout(timer)
  }
}

const elapsed = (started: number) => Math.round((performance.now() - started) * 100) / 100
