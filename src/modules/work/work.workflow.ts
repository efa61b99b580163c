import { sql } from 'drizzle-orm'
import { parse as parseDuration } from 'tinyduration'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import type { Workflow } from '../../db/schema.ts'
import { conflict, type FieldIssue, invalid } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { DEFAULT_STATUS } from '../../rowstore/query/virtual.ts'
import { dueAfterMs, loadWorkflow, workflowOf } from '../../rowstore/workflow.ts'
import { diffFields } from '../changes/changes.service.ts'
import { requirePanel } from '../panels/panels.service.ts'
import type { WorkflowInput } from './work.schemas.ts'

/** Milliseconds of an SLA's `dueAfter` (the row store reads it too). */
export { dueAfterMs }

/**
 * A panel's workflow (WORKLIST.md §2, docs/worklist.md "Workflow"): `GET|PUT
 * /api/panels/{id}/workflow`, for the panel's owner and tenant admins.
 */

export async function getWorkflow(ctx: ServiceContext, panelId: number): Promise<Workflow> {
  const panel = await requirePanel(ctx, panelId)
  return workflowOf(await loadWorkflow(ctx, panel.id))
}

/**
 * Replaces the workflow. Its statuses are unique and include `open` (the status of a row nobody
 * worked); `sla.dueAfter` is a duration of weeks, days, hours, minutes and seconds; `patientReference`
 * names a column of the panel. A status still held by rows cannot be removed: 409 naming how many —
 * checked in the same conditional write that stores the workflow, so a concurrent change of a row
 * to that status cannot slip between.
 */
export async function putWorkflow(ctx: ServiceContext, panelId: number, input: WorkflowInput): Promise<Workflow> {
  const panel = await requirePanel(ctx, panelId)
  const workflow: Workflow = {
    statuses: input.statuses,
    sla: input.sla,
    claimLeaseSeconds: input.claimLeaseSeconds,
    patientReference: input.patientReference,
  }
  const issues: FieldIssue[] = []
  const values = workflow.statuses.map((s) => s.value)
  values.forEach((v, i) => {
    if (values.indexOf(v) !== i) issues.push({ path: `statuses.${i}.value`, message: `"${v}" is listed twice` })
  })
  if (!values.includes(DEFAULT_STATUS)) {
    issues.push({ path: 'statuses', message: `must include "${DEFAULT_STATUS}", the status of a row nobody has worked` })
  }
  if (workflow.sla) {
    const problem = durationProblem(workflow.sla.dueAfter)
    if (problem) issues.push({ path: 'sla.dueAfter', message: problem })
  }
  if (workflow.patientReference !== null) {
    const [found] = await ctx.db.all(
      sql`SELECT 1 FROM columns WHERE tenant_id = ${ctx.scope.tenantId} AND panel_id = ${panel.id} AND name = ${workflow.patientReference}`,
    )
    if (!found) issues.push({ path: 'patientReference', message: `no column named "${workflow.patientReference}"` })
  }
  if (issues.length > 0) throw invalid(issues, `Invalid workflow: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`)
  const before = workflowOf(await loadWorkflow(ctx, panel.id))
  const kept = JSON.stringify(values)
  // Rows that hold no work state are `open`, which every workflow keeps.
  const held = sql`SELECT count(*) FROM row_identities WHERE tenant_id = ${ctx.scope.tenantId} AND panel_id = ${panel.id}
    AND status NOT IN (SELECT value FROM json_each(${kept}))`
  const [updated] = await ctx.db.batch([
    ctx.db.run(sql`UPDATE panels SET workflow = ${JSON.stringify(workflow)}, updated_at = ${isoNow(ctx.clock)}
      WHERE id = ${panel.id} AND tenant_id = ${ctx.scope.tenantId} AND (${held}) = 0`),
    ctx.db.run(sql`INSERT INTO changes (tenant_id, user_id, panel_id, entity_type, entity_id, action, changes, metadata, created_at)
      SELECT tenant_id, ${ctx.scope.userId}, id, 'Panel', id, 'UPDATE', ${JSON.stringify(diffFields({ workflow: before }, { workflow }, ['workflow']))},
        ${JSON.stringify({ source: ctx.meta.source })}, ${isoNow(ctx.clock)}
      FROM panels WHERE id = ${panel.id} AND tenant_id = ${ctx.scope.tenantId} AND (${held}) = 0 AND workflow = ${JSON.stringify(workflow)}`),
  ])
  if (rowsAffected(updated) === 0) {
    const [{ n }] = await ctx.db.all<{ n: number }>(sql`SELECT (${held}) AS n`)
    throw conflict(`${n} ${Number(n) === 1 ? 'row still holds' : 'rows still hold'} a status the workflow removes`, {
      rows: Number(n),
    })
  }
  return workflow
}

// --- Internal helpers ---

/** Why a `dueAfter` is refused, or undefined when it is a usable duration. */
function durationProblem(text: string): string | undefined {
  let d: ReturnType<typeof parseDuration>
  try {
    d = parseDuration(text)
  } catch {
    return `"${text}" is not an ISO 8601 duration (e.g. PT48H, P2D)`
  }
  if (d.negative) return 'must not be negative'
  if ((d.years ?? 0) > 0 || (d.months ?? 0) > 0) return 'years and months have no fixed length: give weeks, days or hours'
  if (dueAfterMs(text) <= 0) return 'must be longer than zero'
  return undefined
}
