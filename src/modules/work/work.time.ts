import type { Deps } from '../../deps.ts'
import { loadPanelMembership } from '../../rowstore/membership-plan.ts'
import { panelsWithTimeDue, timeStatements } from '../../rowstore/work-time.ts'
import { changeWork, rowWrite } from '../../rowstore/write.ts'
import type { TimeReport } from './work.time-report.ts'

export type { TimeReport }

/**
 * The scheduler's time step at `now` (docs/worklist.md "Time rules"): per panel with something
 * due, one batch of the row store's write protocol that frees expired claims, appends the
 * `row.overdue` still owed and applies ended snoozes, with the moves of the views that show or
 * filter on `_assignee`, `_overdue` or `_snoozed`, computed at `now`. Every part of the batch is
 * conditional on the state it reads in its transaction: two instances running the step at once
 * never both act on a row (the second finds nothing). A panel that fails is logged and left for
 * the next step; the others go on.
 */
export async function runTimeStep(deps: Deps, now: Date = deps.clock.now()): Promise<TimeReport> {
  const at = now.toISOString()
  const report: TimeReport = { panels: 0, freed: 0, overdue: 0, woken: 0 }
  const due = await deps.db.all<{ tenant_id: string; panel_id: number }>(panelsWithTimeDue(at))
  for (const { tenant_id: tenantId, panel_id } of due) {
    const panelId = Number(panel_id)
    const write = rowWrite({ tenantId, panelId, actorId: 'system', cause: 'work', eventKey: `time:${panelId}:${at}`, at })
    try {
      const membership = await loadPanelMembership(deps.db, tenantId, panelId, { at })
      const { capture, apply, read } = timeStatements(write)
      const [done] = await changeWork(deps, {
        panel: { tenantId, panelId },
        write,
        membership,
        capture,
        apply,
        read,
      })
      report.panels++
      report.freed += Number(done?.freed ?? 0)
      report.overdue += Number(done?.overdue ?? 0)
      report.woken += Number(done?.woken ?? 0)
    } catch (err) {
      deps.log.error('time step failed', { tenantId, panelId, error: (err as Error)?.message })
    }
  }
  return report
}
