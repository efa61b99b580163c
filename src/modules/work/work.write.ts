import type { SQL } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import type { PanelMembership } from '../../rowstore/membership-plan.ts'
import { capturedSelect, workChangeStatements } from '../../rowstore/work-sql.ts'
import { changeWork, rowWrite } from '../../rowstore/write.ts'
import type { WorkStateDto } from './work.schemas.ts'

/**
 * One change of work state through the row store's write protocol (write.ts `changeWork`): the
 * identities `pick` selects in the transaction get `set`, each with its `row.work_updated`, its
 * change record and the moves of the views that show or filter on a virtual column, in one batch.
 * Answers the changed identities' new states (none: `pick` selected nothing, so nothing was written).
 */
export async function applyWork(
  ctx: ServiceContext,
  change: {
    panelId: number
    pick: SQL
    set: SQL
    cause: 'claim' | 'release' | 'lease_expired' | 'patch' | 'next' | 'sla'
    at: string
    /** The panel's views compiled at the change's time, when the caller has read them (work.access.ts `membership`). */
    membership?: (at: string) => Promise<PanelMembership>
  },
): Promise<(WorkStateDto & { rowId: number })[]> {
  const { tenantId, userId } = ctx.scope
  const write = rowWrite({
    tenantId,
    panelId: change.panelId,
    actorId: userId,
    cause: 'work',
    eventKey: `work:${crypto.randomUUID()}`,
    at: change.at,
  })
  const { userAgent, ipAddress, source } = ctx.meta
  const metadata = JSON.stringify({
    source,
    ...(userAgent ? { userAgent } : {}),
    ...(ipAddress ? { ipAddress } : {}),
    cause: change.cause,
  })
  const { capture, listed, apply } = workChangeStatements({
    token: write.token,
    tenantId,
    panelId: change.panelId,
    pick: change.pick,
    set: change.set,
    at: change.at,
    by: userId,
    cause: change.cause,
    metadata,
  })
  const rows = await changeWork(ctx, {
    panel: { tenantId, panelId: change.panelId },
    write,
    membership: await change.membership?.(change.at),
    capture,
    listed,
    apply,
    read: capturedSelect(write.token),
  })
  return rows.map((r) => ({ rowId: Number(r.id), ...(JSON.parse(String(r.work)) as WorkStateDto) }))
}
