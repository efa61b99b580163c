import { Cron } from 'croner'
import type { FieldIssue } from '../../errors.ts'

/**
 * Scheduled syncs (DATA-ENGINE: `nextSyncAt` from `schedule` and `timezone`). Any source type may
 * carry `config.schedule` (a cron expression, 5 or 6 fields) and `config.timezone` (an IANA name,
 * default UTC).
 */

/** Problems with `config.schedule` / `config.timezone`, as 400 details; empty when fine. */
export function scheduleIssues(config: Record<string, unknown>): FieldIssue[] {
  const issues: FieldIssue[] = []
  const { schedule, timezone } = config
  if (timezone !== undefined && timezone !== null) {
    if (typeof timezone !== 'string' || !isTimeZone(timezone)) {
      issues.push({ path: 'config.timezone', message: 'must be an IANA time zone such as Europe/Paris or UTC' })
    }
  }
  if (schedule !== undefined && schedule !== null && schedule !== '') {
    if (typeof schedule !== 'string') issues.push({ path: 'config.schedule', message: 'must be a cron expression string' })
    else {
      try {
        new Cron(schedule, { paused: true, timezone: typeof timezone === 'string' && isTimeZone(timezone) ? timezone : 'UTC' })
      } catch (err) {
        issues.push({ path: 'config.schedule', message: `is not a valid cron expression: ${(err as Error).message}` })
      }
    }
  }
  return issues
}

/** The next run after `from` as an ISO string, or null when the source has no (valid) schedule. */
export function nextSyncAt(config: Record<string, unknown>, from: Date): string | null {
  const { schedule, timezone } = config
  if (typeof schedule !== 'string' || schedule === '') return null
  try {
    const cron = new Cron(schedule, {
      paused: true,
      timezone: typeof timezone === 'string' && isTimeZone(timezone) ? timezone : 'UTC',
    })
    return cron.nextRun(from)?.toISOString() ?? null
  } catch {
    return null
  }
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name })
    return true
  } catch {
    return false
  }
}
