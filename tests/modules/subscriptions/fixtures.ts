import { createHmac } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { runBatch } from '../../../src/db/client.ts'
import { buildDeps, type Deps } from '../../../src/deps.ts'
import { createLogger } from '../../../src/lib/logger.ts'
import { deliverDueWebhooks } from '../../../src/modules/subscriptions/subscriptions.queue.ts'
import { appendEvents, type NewEvent } from '../../../src/rowstore/events.ts'
import type { TestApp } from '../../helpers/app.ts'
import { type FixtureServer, startJsonServer } from '../../helpers/servers.ts'

/** What a receiver answers to its n-th request (1-based): a status, or 'hang' (no answer at all). */
export type Answer = (n: number, req: IncomingMessage & { body: string }) => number | 'hang'

/** A subscriber's endpoint on 127.0.0.1: answers per `answer`, keeps every request. */
export async function startReceiver(answer: Answer = () => 200): Promise<FixtureServer> {
  let n = 0
  return startJsonServer(async (req, res) => {
    const status = answer(++n, req)
    if (status === 'hang') return new Promise<void>(() => {})
    res.writeHead(status, { 'content-type': 'text/plain' })
    res.end(status < 300 ? 'ok' : 'no')
  })
}

/** Appends events to a tenant's log the way the row store does: in one batch (no wake-up). */
export async function emit(deps: Deps, tenantId: string, events: NewEvent[], at = deps.clock.now().toISOString()) {
  const statements = appendEvents(tenantId, events, at)
  await runBatch(
    deps.db,
    statements.map((s) => deps.db.run(s)),
  )
}

/** The delivery step (what the scheduler runs), at the deps' clock. */
export const step = (deps: Deps) => deliverDueWebhooks(deps)

/** The signature a receiver computes: sha256= and the hex HMAC-SHA256 of the raw body. */
export const expectedSignature = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`

/** The bodies a receiver got, parsed. */
export const bodies = (r: FixtureServer) => r.requests.map((q) => JSON.parse(q.body))

/**
 * Another instance of the service on the same database as `t` (own deps: cache, bus, background
 * work; the database shared), as a second process on a shared remote database would be.
 */
export async function sameDatabaseInstance(t: TestApp, deps: Deps = t.deps): Promise<Deps> {
  return buildDeps(deps.config, {
    db: deps.db,
    storage: createStorage({ driver: memoryDriver() }),
    clock: t.clock,
    log: createLogger('silent'),
  })
}
