import { sql } from 'drizzle-orm'
import type { ServiceDeps } from '../../context.ts'
import type { LiveBus } from '../../live/bus.ts'
import { deliverDueWebhooks } from './subscriptions.queue.ts'

/**
 * The prompt path of deliveries (docs/live.md "Where deliveries run"): after a commit of a tenant's
 * events (`deps.live`), a delivery pass for that tenant runs in the background. The periodic step
 * stays the guarantee — it serves other instances' commits, restarts and retries — so a lost or
 * skipped pass only delays a delivery. The subscription's lease decides who sends, so passes, steps
 * and other instances never send one delivery twice. Keyed by the bus, which belongs to one set of
 * deps: nothing here is process-global. Deps live either as long as their process or for one
 * invocation, and each kind learns which commits to follow its own way:
 *
 * - a long-running process (Node, Deno, embedded) keeps a list of the tenants with active
 *   subscriptions (`watchSubscribedTenants`, `watchTenant`): other tenants' commits cost nothing;
 * - one invocation (Workers: `deliverAfterCommits`) has no such list: each tenant that commits gets
 *   one pass, whose first query is the subscriptions' index search (none active: nothing more).
 */
const watched = new WeakMap<LiveBus, Set<string>>()

/** Starts kicking deliveries after the tenant's commits, once per bus and tenant. */
export function watchTenant(deps: ServiceDeps, tenantId: string) {
  const tenants = watched.get(deps.live) ?? new Set<string>()
  watched.set(deps.live, tenants)
  if (tenants.has(tenantId)) return
  tenants.add(tenantId)
  let running = false
  let again = false
  const run = async () => {
    running = true
    try {
      do {
        again = false
        await deliverDueWebhooks(deps, { tenantId })
      } while (again && !deps.stopping?.aborted)
    } finally {
      running = false
    }
  }
  deps.live.listen(tenantId, () => {
    // A commit while a step runs: one more step after it (the events may be past its reads).
    if (running) again = true
    else deps.defer(run(), { what: 'webhook delivery', tenantId })
  })
}

/** Watches every tenant with an active subscription (start-up and each step of the interval loop). */
export async function watchSubscribedTenants(deps: ServiceDeps): Promise<void> {
  const tenants = await deps.db.all<{ tenant_id: string }>(sql`SELECT DISTINCT tenant_id FROM subscriptions WHERE active = 1`)
  for (const t of tenants) watchTenant(deps, t.tenant_id)
}

/** What the runtime of one invocation gives the passes after its commits (src/runtime/workers.ts). */
export interface Invocation {
  /**
   * Resolves once the invocation's own writes are done (its response made, the background work it
   * deferred settled), with a signal that aborts shortly before the runtime ends the invocation.
   */
  settled(): Promise<AbortSignal>
  /** Keeps a pass alive after the response (the invocation's `waitUntil`); `settled` does not wait for it. */
  waitUntil(work: Promise<unknown>): void
}

/**
 * Deliveries after the commits of deps that serve one invocation: at most one pass per tenant,
 * started once the invocation's writes are done, so it takes every event they committed. The
 * signal of `settled` is the pass's `stopping`: it sends nothing more once the invocation is about
 * to end and gives its leases back (an attempt cut off there is sent again later: at least once).
 */
export function deliverAfterCommits(deps: ServiceDeps, invocation: Invocation): void {
  const passed = new Set<string>()
  deps.live.listenAll((tenantId) => {
    if (passed.has(tenantId)) return
    passed.add(tenantId)
    const pass = invocation.settled().then((stopping) => deliverDueWebhooks(stoppingAt(deps, stopping), { tenantId }))
    invocation.waitUntil(
      pass.catch((err) => deps.log.error('webhook delivery failed', { tenantId, error: (err as Error)?.message })),
    )
  })
}

/** The deps with their own `stopping` signal, the rest shared (the prototype, like a service context). */
function stoppingAt(deps: ServiceDeps, stopping: AbortSignal): ServiceDeps {
  return Object.create(deps, { stopping: { value: stopping } }) as ServiceDeps
}
