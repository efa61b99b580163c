import { type ServiceContext, type ServiceDeps, serviceContext } from '../../context.ts'
import { AppError, invalid } from '../../errors.ts'
import { findPanel, getPanel } from '../panels/panels.service.ts'
import { loadVisibleView } from '../views/views.service.ts'

/**
 * Who a subscription reads as (docs/live.md "Outbound webhooks", "What a subscription receives"):
 * its owner as a plain user of the tenant — no admin role, no groups, no view password. A token's
 * role and groups are facts of one request; a subscription outlives them, so it never carries
 * them: a demoted admin or a user removed from a group stops receiving what they no longer read.
 * The same scope checks `panelId`/`viewId` when the subscription is stored, so what is accepted
 * there is what can be delivered.
 */
export function ownerContext(deps: ServiceDeps, tenantId: string, userId: string): ServiceContext {
  return serviceContext(
    deps,
    { tenantId, userId, isAdmin: false, groups: [] },
    { requestId: `webhooks-${crypto.randomUUID()}`, source: 'system' },
  )
}

export interface EventScope {
  type: string
  panelId: number | null
  viewId: number | null
}

/**
 * May the owner read this event (the feed's rules, LIVE.md "Reading the log")? A view's events
 * (`viewId` set) go to readers of the view (views.service loadVisibleView: the owner, or a published,
 * unexpired view without groups or password); a panel's events to the panel's owner. A
 * `view.deleted` whose view is gone falls back to the panel's owner. An event naming neither is
 * never delivered. Evaluated when a delivery is queued and again when it is sent.
 */
export async function mayReadEvent(owner: ServiceContext, event: EventScope): Promise<boolean> {
  if (event.viewId !== null) {
    try {
      await loadVisibleView(owner, event.viewId)
      return true
    } catch (err) {
      if (!(err instanceof AppError)) throw err
      if (!(event.type === 'view.deleted' && err.code === 'NOT_FOUND')) return false
    }
  }
  if (event.panelId === null) return false
  const panel = await findPanel(owner, event.panelId)
  return panel !== undefined && panel.userId === owner.scope.userId
}

/**
 * A memo of `mayReadEvent` for one pass over a queue: events of one panel and view share the answer.
 */
export function readableMemo(owner: ServiceContext) {
  const known = new Map<string, Promise<boolean>>()
  return (event: EventScope) => {
    const key = `${event.panelId}|${event.viewId}|${event.type === 'view.deleted'}`
    const answer = known.get(key) ?? mayReadEvent(owner, event)
    known.set(key, answer)
    return answer
  }
}

/**
 * Checks the `panelId` and `viewId` a subscription narrows to, as its owner would read them at
 * delivery: the panel must be the caller's own, the view one they may read without a password, and
 * a view given with a panel must be of that panel. Unknown or unreadable ones are 404s that reveal
 * nothing (as everywhere); the rest are 400s naming the field.
 */
export async function checkTargets(ctx: ServiceContext, target: { panelId: number | null; viewId: number | null }) {
  const owner = ownerContext(ctx, ctx.scope.tenantId, ctx.scope.userId)
  if (target.panelId !== null) await getPanel(owner, target.panelId)
  if (target.viewId === null) return
  let view: Awaited<ReturnType<typeof loadVisibleView>>
  try {
    view = await loadVisibleView(owner, target.viewId)
  } catch (err) {
    if (err instanceof AppError && (err.code === 'VIEW_PASSWORD_REQUIRED' || err.code === 'VIEW_PASSWORD_INVALID')) {
      throw invalid([{ path: 'viewId', message: 'a password-protected view shared with you cannot be subscribed to' }])
    }
    throw err
  }
  if (target.panelId !== null && view.row.panelId !== target.panelId) {
    throw invalid([{ path: 'viewId', message: `view ${target.viewId} is not a view of panel ${target.panelId}` }])
  }
}
