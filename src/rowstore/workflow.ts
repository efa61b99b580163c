import { type SQL, sql } from 'drizzle-orm'
import { parse as parseDuration } from 'tinyduration'
import type { Db } from '../db/client.ts'
import type { Workflow } from '../db/schema.ts'
import { DEFAULT_STATUS, type WorkClock } from './query/virtual.ts'

/**
 * A panel's workflow (WORKLIST.md §2, docs/worklist.md): its statuses (one of them `open`, the
 * status of a row nobody has worked), the SLA, the default claim lease and the patient column. A
 * panel that never set one has the defaults.
 */

export const DEFAULT_WORKFLOW: Workflow = {
  statuses: [
    { value: DEFAULT_STATUS, label: 'Open', done: false },
    { value: 'in_progress', label: 'In progress', done: false },
    { value: 'done', label: 'Done', done: true },
  ],
  sla: null,
  claimLeaseSeconds: null,
  patientReference: null,
}

/** The panel's workflow, or the defaults. */
export const workflowOf = (stored: Workflow | null | undefined): Workflow => stored ?? DEFAULT_WORKFLOW

/** The statuses that count as done (no `_overdue`, never handed out by `next`). */
export const doneStatuses = (workflow: Workflow | null | undefined): string[] =>
  workflowOf(workflow)
    .statuses.filter((s) => s.done)
    .map((s) => s.value)

/** What virtual columns are computed with for a reader at `now`. */
export const workClock = (workflow: Workflow | null | undefined, now: Date | string = new Date()): WorkClock => ({
  now: typeof now === 'string' ? now : now.toISOString(),
  done: doneStatuses(workflow),
})

/** The stored workflow of a panel of the caller's tenant (null: the defaults). */
export async function loadWorkflow(ctx: { db: Db; scope: { tenantId: string } }, panelId: number): Promise<Workflow | null> {
  const [row] = await ctx.db.all<{ workflow: string | null }>(
    sql`SELECT workflow FROM panels WHERE id = ${panelId} AND tenant_id = ${ctx.scope.tenantId}`,
  )
  return row?.workflow ? (JSON.parse(row.workflow) as Workflow) : null
}

/**
 * The done statuses of the panel whose id is `panelId`, in SQL, read where a statement runs (so a
 * conditional write sees the workflow as it is written); the defaults' while the panel has none.
 */
export const doneStatusesSql = (panelId: SQL): SQL => statusesSql(panelId, sql`s.value ->> 'done'`)

/** The statuses of the panel whose id is `panelId` (only those where `which` holds, over `s`), in SQL, read where a statement runs. */
export const statusesSql = (panelId: SQL, which: SQL = sql`1`): SQL =>
  sql`SELECT s.value ->> 'value' FROM panels p, json_each(coalesce(p.workflow, ${JSON.stringify(DEFAULT_WORKFLOW)}), '$.statuses') s
    WHERE p.id = ${panelId} AND ${which}`

/** Milliseconds of an SLA's `dueAfter` (a checked duration: weeks, days, hours, minutes, seconds). */
export function dueAfterMs(dueAfter: string): number {
  const d = parseDuration(dueAfter)
  const seconds = ((((d.weeks ?? 0) * 7 + (d.days ?? 0)) * 24 + (d.hours ?? 0)) * 60 + (d.minutes ?? 0)) * 60 + (d.seconds ?? 0)
  return Math.round(seconds * 1000)
}

/** The SLA of a workflow in milliseconds (null: none, or a stored duration that no longer reads). */
export function slaMs(workflow: Workflow | null | undefined): number | null {
  const dueAfter = workflow?.sla?.dueAfter
  if (!dueAfter) return null
  try {
    const ms = dueAfterMs(dueAfter)
    return ms > 0 ? ms : null
  } catch {
    return null
  }
}
