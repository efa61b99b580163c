import { sql } from 'drizzle-orm'
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
