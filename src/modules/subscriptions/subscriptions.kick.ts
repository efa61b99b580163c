import { sql } from 'drizzle-orm'
import type { ServiceDeps } from '../../context.ts'
import type { LiveBus } from '../../live/bus.ts'
import { deliverDueWebhooks } from './subscriptions.queue.ts'

/**
 * The prompt path of deliveries on a long-running instance (Node, Deno, embedded): after a commit
 * of a tenant's events (`deps.live`), a delivery step for that tenant runs in the background
 * (`deps.defer`). The periodic step stays the guarantee — it serves other instances' commits,
 * restarts and retries — so a lost wake-up only delays a delivery. Keyed by the bus, which belongs
 * to one set of deps: nothing here is process-global.
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
