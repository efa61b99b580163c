import { and, asc, eq, sql } from 'drizzle-orm'
import type { ServiceDeps } from '../../context.ts'
import { rowsAffected } from '../../db/client.ts'
import { subscriptionDeliveries, subscriptions } from '../../db/schema-live.ts'
import { readEvent } from '../events/events.log.ts'
import { toEventDto } from '../events/events.schemas.ts'
import { afterFhirAttempt, type FhirDelivery, fhirDeliveryOf } from '../fhir-topic/fhir.topic.delivery.ts'
import { type EventScope, ownerContext, readableMemo } from './subscriptions.access.ts'
import { type AttemptOutcome, sendAttempt } from './subscriptions.deliver.ts'
import type { DeliveryReport } from './subscriptions.report.ts'
import { ALL_EVENTS, type DeliveryRow, type SubscriptionRow } from './subscriptions.schemas.ts'

/**
 * The durable delivery queue (docs/live.md "Outbound webhooks"). Per subscription, deliveries are
 * sent one at a time in `seq` order by whoever holds the subscription's lease (a row lease in the
 * database, like the sync lease), so several instances never send one twice and never overtake.
 */

/** Waits after the 1st, 2nd, … failed attempt; after the last one the delivery is `failed`. */
export const BACKOFF_MS = [10_000, 60_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 6 * 3_600_000] as const
export const MAX_ATTEMPTS = BACKOFF_MS.length + 1
/** Events of the log taken into one subscription's queue at a time. */
const ENQUEUE_BATCH = 100
/** Attempts one subscription gets per step, so one busy subscription cannot hold a step. */
const SENDS_PER_STEP = 100
/** Subscriptions one step looks at, and how many are served at once. */
const SUBSCRIPTIONS_PER_STEP = 100
const CONCURRENCY = 4
/** Finished deliveries (delivered, failed, skipped) are kept this long for GET …/deliveries. */
export const HISTORY_DAYS = 30
const PRUNE_BATCH = 1000

/** A lease outlives one attempt (the time-out) by a minute; every attempt renews it. */
const leaseMs = (deps: ServiceDeps) => deps.config.webhooks.timeoutMs + 60_000

export interface StepOptions {
  now?: Date
  /** Only this tenant's subscriptions (the prompt kick after a commit). */
  tenantId?: string
}

/**
 * One delivery step (the scheduler's periodic step on every runtime, the cron trigger on Workers,
 * and the kick after a commit): every active subscription with a delivery due, or with events in the
 * log beyond its cursor and nothing pending, whose lease is free, is served: its due head delivery
 * is sent, then the next, until one fails (it waits for its retry: head-of-line), nothing is left, or
 * SENDS_PER_STEP. Never throws for a subscriber's failure.
 */
export async function deliverDueWebhooks(deps: ServiceDeps, options: StepOptions = {}): Promise<DeliveryReport> {
  const start = options.now ?? deps.clock.now()
  const clock = () => new Date(Math.max(start.getTime(), deps.clock.now().getTime()))
  const at = start.toISOString()
  const report: DeliveryReport = { subscriptions: 0, delivered: 0, retried: 0, failed: 0, disabled: 0, pruned: 0 }
  const tenant = options.tenantId === undefined ? sql`` : sql`AND s.tenant_id = ${options.tenantId}`
  const due = await deps.db.all<{ id: number }>(sql`
    SELECT s.id FROM subscriptions s
    WHERE s.active = 1 ${tenant} AND (s.lease_token IS NULL OR s.lease_expires_at < ${at})
      AND (EXISTS (SELECT 1 FROM subscription_deliveries d
                   WHERE d.subscription_id = s.id AND d.status = 'pending' AND d.next_attempt_at <= ${at})
        OR (NOT EXISTS (SELECT 1 FROM subscription_deliveries d WHERE d.subscription_id = s.id AND d.status = 'pending')
            AND s.cursor_seq < ifnull((SELECT last_seq FROM event_sequences q WHERE q.tenant_id = s.tenant_id), 0)))
    ORDER BY s.id LIMIT ${SUBSCRIPTIONS_PER_STEP}`)
  const ids = due.map((r) => Number(r.id))
  const workers = Array.from({ length: Math.min(CONCURRENCY, ids.length) }, async () => {
    for (let id = ids.shift(); id !== undefined; id = ids.shift()) {
      if (deps.stopping?.aborted) return
      try {
        await serveSubscription(deps, id, clock, report)
      } catch (err) {
        deps.log.error('webhook delivery step failed', { subscriptionId: id, error: (err as Error)?.message })
      }
    }
  })
  await Promise.all(workers)
  if (options.tenantId === undefined) report.pruned = await pruneDeliveryHistory(deps, start)
  return report
}

// --- Internal helpers ---

type Clock = () => Date

/** Takes the subscription's lease, serves its queue, gives the lease back. */
async function serveSubscription(deps: ServiceDeps, id: number, clock: Clock, report: DeliveryReport) {
  const token = crypto.randomUUID()
  let sub = await takeLease(deps, id, token, clock)
  if (!sub) return
  report.subscriptions++
  // The row as the lease's UPDATE answered it: the first attempt needs no renewal to read it fresh.
  let fresh = true
  try {
    let sealed = ''
    let secret = ''
    const unseal = async (row: SubscriptionRow) => {
      if (row.secret === sealed) return true
      try {
        secret = await deps.secrets.decrypt(row.secret)
        sealed = row.secret
        return true
      } catch {
        await disable(deps, row, token, clock, 'The signing secret cannot be decrypted (was ENCRYPTION_KEY changed?)')
        report.disabled++
        return false
      }
    }
    if (!(await unseal(sub))) return
    const readable = readableMemo(ownerContext(deps, sub.tenantId, sub.userId))
    for (let sent = 0; sent < SENDS_PER_STEP && !deps.stopping?.aborted; ) {
      const [head] = await deps.db
        .select()
        .from(subscriptionDeliveries)
        .where(and(eq(subscriptionDeliveries.subscriptionId, id), eq(subscriptionDeliveries.status, 'pending')))
        .orderBy(asc(subscriptionDeliveries.id))
        .limit(1)
      if (!head) {
        if (!(await enqueue(deps, sub, token, readable, clock))) return
        continue
      }
      if (head.nextAttemptAt !== null && head.nextAttemptAt > clock().toISOString()) return
      // The row as it is now: deactivated, deleted or taken over stops here; a new url or secret applies.
      if (!fresh) {
        const renewed = await renewLease(deps, id, token, clock)
        if (!renewed || !(await unseal(renewed))) return
        sub = renewed
      }
      fresh = false
      const result = await deliverHead(deps, { sub, head, secret, token, readable, clock })
      if (result === 'passed') continue
      sent++
      if (result === 'delivered') report.delivered++
      else if (result === 'retry') report.retried++
      else report.failed++
      if (result === 'disabled') report.disabled++
      if (result === 'retry' || result === 'disabled') return
    }
  } finally {
    await deps.db.run(
      sql`UPDATE subscriptions SET lease_token = NULL, lease_expires_at = NULL WHERE id = ${id} AND lease_token = ${token}`,
    )
  }
}

/**
 * The lease is free (none, or expired): one UPDATE takes it, so of several runners exactly one wins,
 * and answers the subscription as it is (undefined: another runner holds it, or it is inactive).
 */
async function takeLease(deps: ServiceDeps, id: number, token: string, clock: Clock): Promise<SubscriptionRow | undefined> {
  const now = clock()
  const expires = new Date(now.getTime() + leaseMs(deps)).toISOString()
  const [row] = await deps.db
    .update(subscriptions)
    .set({ leaseToken: token, leaseExpiresAt: expires })
    .where(
      and(
        eq(subscriptions.id, id),
        eq(subscriptions.active, true),
        sql`(${subscriptions.leaseToken} IS NULL OR ${subscriptions.leaseExpiresAt} < ${now.toISOString()})`,
      ),
    )
    .returning()
  return row
}

/**
 * Moves the lease's expiry on before an attempt and answers the subscription as it is now; undefined
 * when it was deactivated or deleted, or another runner took the lease meanwhile.
 */
async function renewLease(deps: ServiceDeps, id: number, token: string, clock: Clock): Promise<SubscriptionRow | undefined> {
  const expires = new Date(clock().getTime() + leaseMs(deps)).toISOString()
  const [row] = await deps.db
    .update(subscriptions)
    .set({ leaseExpiresAt: expires })
    .where(and(eq(subscriptions.id, id), eq(subscriptions.leaseToken, token), eq(subscriptions.active, true)))
    .returning()
  return row
}

/**
 * Takes the next events of the tenant's log beyond the cursor into the queue: those of the
 * subscription's types, panel and view that its owner may read; the cursor moves past all of them.
 * Events between the cursor and the oldest retained one were pruned by retention before the queue
 * took them: one `events.expired` notice stands in for them. False when the log holds nothing new.
 */
async function enqueue(
  deps: ServiceDeps,
  sub: SubscriptionRow,
  token: string,
  readable: (e: EventScope) => Promise<boolean>,
  clock: Clock,
): Promise<boolean> {
  const cursor = sub.cursorSeq
  const [events, [sequence]] = await deps.db.batch([
    deps.db.all<{ seq: number; type: string; panel_id: number | null; view_id: number | null }>(sql`
      SELECT seq, type, panel_id, view_id FROM events
      WHERE tenant_id = ${sub.tenantId} AND seq > ${cursor} ORDER BY seq LIMIT ${ENQUEUE_BATCH}`),
    deps.db.all<{ last_seq: number }>(sql`SELECT last_seq FROM event_sequences WHERE tenant_id = ${sub.tenantId}`),
  ])
  const lastSeq = Number(sequence?.last_seq ?? 0)
  if (events.length === 0 && lastSeq <= cursor) return false
  const now = clock().toISOString()
  const rows: [string, number | null, string, string | null][] = []
  const firstSeq = events.length > 0 ? Number(events[0].seq) : lastSeq + 1
  const fhir = sub.kind === 'fhir-topic'
  // A FHIR topic subscription numbers its notifications; a pruned gap is no notification of its topic.
  if (firstSeq > cursor + 1 && !fhir) {
    const deliveryId = crypto.randomUUID()
    const notice = {
      id: `expired-${cursor + 1}-${firstSeq - 1}`,
      type: 'events.expired',
      tenantId: sub.tenantId,
      occurredAt: now,
      data: { subscriptionId: sub.id, fromSeq: cursor + 1, toSeq: firstSeq - 1 },
    }
    rows.push([deliveryId, null, notice.type, JSON.stringify(notice)])
  }
  const numbered: number[] = []
  for (const e of events) {
    const event: EventScope = { type: e.type, panelId: nullableNumber(e.panel_id), viewId: nullableNumber(e.view_id) }
    if (fhir && endsTopic(sub, event)) {
      // The end of the subscribed view: its subscribers learn it whoever may read the panel.
      rows.push([crypto.randomUUID(), Number(e.seq), e.type, null])
      continue
    }
    if (!selects(sub, event) || !(await readable(event))) continue
    rows.push([crypto.randomUUID(), Number(e.seq), e.type, null])
    if (fhir) numbered.push(Number(e.seq))
  }
  const upTo = events.length > 0 ? Number(events[events.length - 1].seq) : lastSeq
  // Both or neither, and only while this runner holds the lease at the cursor it read.
  const held = sql`EXISTS (SELECT 1 FROM subscriptions WHERE id = ${sub.id} AND lease_token = ${token} AND cursor_seq = ${cursor})`
  const statements = [
    deps.db.run(sql`
      INSERT OR IGNORE INTO subscription_deliveries (tenant_id, subscription_id, delivery_id, event_seq, event_type, payload,
        status, attempts, next_attempt_at, created_at, updated_at)
      SELECT ${sub.tenantId}, ${sub.id}, j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, 'pending', 0, ${now}, ${now}, ${now}
      FROM json_each(${JSON.stringify(rows)}) j
      WHERE ${held}
      ORDER BY j.key`),
  ]
  if (numbered.length > 0) {
    // The next event numbers, from the count the database holds, in this same transaction: gapless
    // whichever instance holds the lease (the primary key refuses a number given twice).
    statements.push(
      deps.db.run(sql`
        INSERT INTO fhir_topic_events (subscription_id, event_number, event_seq)
        SELECT ${sub.id}, (SELECT event_count FROM fhir_topic_subscriptions WHERE subscription_id = ${sub.id}) + j.key + 1, j.value
        FROM json_each(${JSON.stringify(numbered)}) j
        WHERE ${held}`),
      deps.db.run(sql`
        UPDATE fhir_topic_subscriptions SET event_count = event_count + ${numbered.length}
        WHERE subscription_id = ${sub.id} AND ${held}`),
    )
  }
  statements.push(deps.db.run(sql`UPDATE subscriptions SET cursor_seq = ${upTo} WHERE id = ${sub.id} AND ${held}`))
  const results = await deps.db.batch(statements as unknown as [(typeof statements)[0], ...typeof statements])
  if (rowsAffected(results[results.length - 1]) !== 1) return false
  sub.cursorSeq = upTo
  return true
}

/** A FHIR topic subscription's view was deleted: its last notification (fhir.topic.delivery.ts). */
const endsTopic = (sub: SubscriptionRow, e: EventScope) =>
  e.type === 'view.deleted' && e.viewId !== null && e.viewId === sub.viewId

/** The subscription's own filters: its types (or `*`), its panel, its view. */
function selects(sub: SubscriptionRow, e: EventScope): boolean {
  if (!sub.events.includes(ALL_EVENTS) && !sub.events.includes(e.type)) return false
  if (sub.panelId !== null && e.panelId !== sub.panelId) return false
  if (sub.viewId !== null && e.viewId !== sub.viewId) return false
  return true
}

const nullableNumber = (v: unknown) => (v === null || v === undefined ? null : Number(v))

type HeadResult = 'delivered' | 'retry' | 'failed' | 'disabled' | 'passed'

interface HeadJob {
  sub: SubscriptionRow
  head: DeliveryRow
  secret: string
  token: string
  readable: (e: EventScope) => Promise<boolean>
  clock: Clock
}

/**
 * Sends the head delivery once and records the outcome. A log event is read (and its readability
 * checked) at this moment; one pruned meanwhile, or no longer readable by the owner, is passed over
 * without an attempt.
 */
async function deliverHead(deps: ServiceDeps, job: HeadJob): Promise<HeadResult> {
  const { sub, head } = job
  let body = head.payload
  let eventId = ''
  let fhir: FhirDelivery | undefined
  if (sub.kind === 'fhir-topic') {
    const built = await fhirDeliveryOf(deps, sub, head, job.readable, job.clock().toISOString())
    if ('pass' in built) return pass(deps, job, built.pass, built.error)
    fhir = built
    body = built.body
    eventId = built.eventId
  } else if (body === null) {
    const event = await readEvent(deps.db, sub.tenantId, Number(head.eventSeq))
    if (!event) return pass(deps, job, 'failed', `Event ${head.eventSeq} is no longer retained (events retention)`)
    const scope = { type: event.type, panelId: nullableNumber(event.panelId), viewId: nullableNumber(event.viewId) }
    if (!(await job.readable(scope))) return pass(deps, job, 'skipped', 'The owner may no longer read this event')
    // The same JSON the feed answers (events.schemas.ts): a receiver sees one shape everywhere.
    body = JSON.stringify(toEventDto(sub.tenantId, event))
    eventId = String(head.eventSeq)
  } else {
    eventId = String((JSON.parse(body) as { id: unknown }).id)
  }
  const attempt = head.attempts + 1
  const outcome = await sendAttempt(deps, {
    url: sub.url,
    secret: job.secret,
    body,
    eventId,
    eventType: head.eventType,
    deliveryId: head.deliveryId,
    attempt,
    ...(fhir ? { contentType: fhir.contentType, headers: fhir.headers, timeoutMs: fhir.timeoutMs } : {}),
  })
  if (outcome.interrupted) return 'retry'
  const result = await record(deps, job, attempt, outcome)
  if (fhir) {
    const final = result !== 'retry'
    const facts = { ok: outcome.ok, error: outcome.error, final, quiet: fhir.quiet }
    await afterFhirAttempt(deps, sub, head, facts, job.clock().toISOString())
  }
  return result
}

/** Ends a head delivery without an attempt; it does not count toward disabling. */
async function pass(deps: ServiceDeps, job: HeadJob, status: 'failed' | 'skipped', error: string): Promise<HeadResult> {
  const now = job.clock().toISOString()
  await deps.db.run(sql`
    UPDATE subscription_deliveries SET status = ${status}, error = ${error}, next_attempt_at = NULL, updated_at = ${now}
    WHERE id = ${job.head.id} AND status = 'pending'`)
  return 'passed'
}

async function record(deps: ServiceDeps, job: HeadJob, attempt: number, outcome: AttemptOutcome): Promise<HeadResult> {
  const { sub, head, token } = job
  const now = job.clock()
  const at = now.toISOString()
  const entry = sql`json_object('attempt', ${attempt}, 'at', ${at}, 'statusCode', ${outcome.statusCode},
    'durationMs', ${outcome.durationMs}, 'error', ${outcome.error})`
  const last = sql`attempts = ${attempt}, last_attempt_at = ${at}, status_code = ${outcome.statusCode},
    duration_ms = ${outcome.durationMs}, error = ${outcome.error}, updated_at = ${at},
    history = json_insert(coalesce(history, '[]'), '$[#]', ${entry})`
  const thisHead = sql`id = ${head.id} AND status = 'pending' AND attempts = ${head.attempts}`
  if (outcome.ok) {
    await deps.db.batch([
      deps.db.run(
        sql`UPDATE subscription_deliveries SET status = 'delivered', next_attempt_at = NULL, ${last} WHERE ${thisHead}`,
      ),
      deps.db.run(sql`UPDATE subscriptions SET consecutive_failures = 0 WHERE id = ${sub.id} AND lease_token = ${token}`),
    ])
    return 'delivered'
  }
  if (attempt < MAX_ATTEMPTS) {
    const next = new Date(now.getTime() + BACKOFF_MS[attempt - 1]).toISOString()
    await deps.db.run(sql`UPDATE subscription_deliveries SET next_attempt_at = ${next}, ${last} WHERE ${thisHead}`)
    return 'retry'
  }
  const limit = deps.config.webhooks.disableAfter
  const reason = `Disabled after ${limit} consecutive failed deliveries; the last: ${outcome.error ?? 'failed'}`
  const [, , [after]] = await deps.db.batch([
    deps.db.run(sql`UPDATE subscription_deliveries SET status = 'failed', next_attempt_at = NULL, ${last} WHERE ${thisHead}`),
    deps.db.run(sql`
      UPDATE subscriptions SET consecutive_failures = consecutive_failures + 1,
        active = CASE WHEN consecutive_failures + 1 >= ${limit} THEN 0 ELSE active END,
        disabled_reason = CASE WHEN consecutive_failures + 1 >= ${limit} THEN ${reason} ELSE disabled_reason END,
        updated_at = CASE WHEN consecutive_failures + 1 >= ${limit} THEN ${at} ELSE updated_at END
      WHERE id = ${sub.id} AND lease_token = ${token}`),
    deps.db.select({ active: subscriptions.active }).from(subscriptions).where(eq(subscriptions.id, sub.id)),
  ])
  if (after && !after.active) {
    deps.log.warn('webhook subscription disabled', { subscriptionId: sub.id, tenantId: sub.tenantId, reason })
    return 'disabled'
  }
  return 'failed'
}

async function disable(deps: ServiceDeps, sub: SubscriptionRow, token: string, clock: Clock, reason: string) {
  await deps.db.run(sql`
    UPDATE subscriptions SET active = 0, disabled_reason = ${reason}, updated_at = ${clock().toISOString()}
    WHERE id = ${sub.id} AND lease_token = ${token}`)
  deps.log.warn('webhook subscription disabled', { subscriptionId: sub.id, tenantId: sub.tenantId, reason })
}

/** Deletes finished deliveries older than HISTORY_DAYS, a bounded batch per step. */
async function pruneDeliveryHistory(deps: ServiceDeps, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - HISTORY_DAYS * 86_400_000).toISOString()
  const result = await deps.db.run(sql`
    DELETE FROM subscription_deliveries WHERE id IN (
      SELECT id FROM subscription_deliveries WHERE status <> 'pending' AND updated_at < ${cutoff} LIMIT ${PRUNE_BATCH})`)
  return rowsAffected(result)
}
