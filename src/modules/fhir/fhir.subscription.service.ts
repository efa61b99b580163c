import { and, desc, eq, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { fhirTopicSubscriptions, subscriptionDeliveries, subscriptions } from '../../db/schema-live.ts'
import { AppError, invalid, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { loadWorkflow } from '../../rowstore/workflow.ts'
import { notificationBundle, type StatusFacts, statusSearchset, type TopicEvent } from '../fhir-topic/fhir.notification.ts'
import { HANDSHAKE, toTopicEvent } from '../fhir-topic/fhir.topic.delivery.ts'
import { eventTypeOf } from '../fhir-topic/fhir.topic.ts'
import { ownerContext, readableMemo } from '../subscriptions/subscriptions.access.ts'
import { watchTenant } from '../subscriptions/subscriptions.kick.ts'
import type { SubscriptionRow } from '../subscriptions/subscriptions.schemas.ts'
import { generateSecret } from '../subscriptions/subscriptions.sign.ts'
import { urlRefusal } from '../subscriptions/subscriptions.url.ts'
import { loadVisibleView } from '../views/views.service.ts'
import { parseSubscription } from './fhir.subscription.parse.ts'
import { type FhirSubscriptionResource, toFhirSubscription } from './fhir.subscription.resource.ts'

/**
 * FHIR backport Subscriptions to the view-membership topic (docs/fhir.md "View membership as a
 * topic"). Each is a `subscriptions` row of kind `fhir-topic` (endpoint, owner, view, event types,
 * cursor, lease: the outbound webhook queue delivers it) with its FHIR side in
 * `fhir_topic_subscriptions`. Owned by their creator within the tenant: anyone else's is a 404.
 */

type FhirRow = typeof fhirTopicSubscriptions.$inferSelect

const ownedBy = (ctx: ServiceContext) =>
  and(
    eq(subscriptions.tenantId, ctx.scope.tenantId),
    eq(subscriptions.userId, ctx.scope.userId),
    eq(subscriptions.kind, 'fhir-topic'),
  )

/** How many events one `$events` call answers at most. */
export const EVENTS_PAGE_MAX = 100

/**
 * Stores the Subscription as `requested` and queues its handshake (the first delivery of its queue),
 * in one batch; the queue's kick sends it at once. The signing secret is answered here once.
 */
export async function createFhirSubscription(ctx: ServiceContext, body: unknown, base: string) {
  const parsed = parseSubscription(body, base)
  const refusal = await urlRefusal(ctx, parsed.endpoint)
  if (refusal) throw invalid([{ path: 'Subscription.channel.endpoint', message: refusal }], 'The Subscription is invalid')
  const view = await readableView(ctx, parsed.viewId)
  const secret = generateSecret()
  const now = isoNow(ctx.clock)
  const resource = { reason: parsed.reason }
  const headers = parsed.headers.length > 0 ? await ctx.secrets.encrypt(JSON.stringify(parsed.headers)) : null
  const handshakeId = `handshake-${crypto.randomUUID()}`
  // One transaction: the subscription, its FHIR side and its handshake share the id the first insert gave.
  const [[row]] = await ctx.db.batch([
    ctx.db
      .insert(subscriptions)
      .values({
        tenantId: ctx.scope.tenantId,
        userId: ctx.scope.userId,
        kind: 'fhir-topic',
        url: parsed.endpoint,
        events: parsed.events.map(eventTypeOf),
        panelId: view.panelId,
        viewId: parsed.viewId,
        description: parsed.reason,
        secret: await ctx.secrets.encrypt(secret),
        active: true,
        cursorSeq: sql`(SELECT ifnull((SELECT last_seq FROM event_sequences WHERE tenant_id = ${ctx.scope.tenantId}), 0))`,
        createdAt: now,
        updatedAt: now,
      })
      .returning(),
    ctx.db.run(sql`
      INSERT INTO fhir_topic_subscriptions (subscription_id, tenant_id, status, payload, topic, filters, heartbeat_seconds,
        timeout_seconds, headers, resource, event_count, last_sent_at, created_at, updated_at)
      VALUES (last_insert_rowid(), ${ctx.scope.tenantId}, 'requested', ${parsed.payload}, ${parsed.topic},
        ${JSON.stringify(parsed.filters)}, ${parsed.heartbeatSeconds}, ${parsed.timeoutSeconds}, ${headers},
        ${JSON.stringify(resource)}, 0, ${now}, ${now}, ${now})`),
    ctx.db.run(sql`
      INSERT INTO subscription_deliveries (tenant_id, subscription_id, delivery_id, event_seq, event_type, payload, status,
        attempts, next_attempt_at, created_at, updated_at)
      VALUES (${ctx.scope.tenantId}, last_insert_rowid(), ${crypto.randomUUID()}, NULL, ${HANDSHAKE},
        ${JSON.stringify({ id: handshakeId })}, 'pending', 0, ${now}, ${now}, ${now})`),
  ])
  watchTenant(ctx, row.tenantId)
  ctx.live.committed(row.tenantId)
  const [fhir] = await ctx.db.select().from(fhirTopicSubscriptions).where(eq(fhirTopicSubscriptions.subscriptionId, row.id))
  return toFhirSubscription(row, fhir, { secret, requested: true })
}

/** The caller's Subscription as FHIR, or a 404. */
export async function getFhirSubscription(ctx: ServiceContext, id: number): Promise<FhirSubscriptionResource> {
  const { row, fhir } = await requireFhirSubscription(ctx, id)
  return toFhirSubscription(row, fhir)
}

/** The caller's Subscriptions, newest first, as a `searchset` Bundle. */
export async function listFhirSubscriptions(ctx: ServiceContext, base: string) {
  const rows = await ctx.db
    .select({ row: subscriptions, fhir: fhirTopicSubscriptions })
    .from(subscriptions)
    .innerJoin(fhirTopicSubscriptions, eq(fhirTopicSubscriptions.subscriptionId, subscriptions.id))
    .where(ownedBy(ctx))
    .orderBy(desc(subscriptions.id))
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    total: rows.length,
    link: [{ relation: 'self', url: `${base}/Subscription` }],
    entry: rows.map(({ row, fhir }) => ({
      fullUrl: `${base}/Subscription/${row.id}`,
      resource: toFhirSubscription(row, fhir),
      search: { mode: 'match' },
    })),
  }
}

/** Deletes the Subscription with its queue and event numbers: nothing more is sent. */
export async function deleteFhirSubscription(ctx: ServiceContext, id: number): Promise<void> {
  await requireFhirSubscription(ctx, id)
  await ctx.db.batch([
    ctx.db.run(sql`DELETE FROM fhir_topic_events WHERE subscription_id = ${id}`),
    ctx.db.delete(fhirTopicSubscriptions).where(eq(fhirTopicSubscriptions.subscriptionId, id)),
    ctx.db.delete(subscriptionDeliveries).where(eq(subscriptionDeliveries.subscriptionId, id)),
    ctx.db.delete(subscriptions).where(and(eq(subscriptions.id, id), ownedBy(ctx))),
  ])
}

/** `$status`: the SubscriptionStatus (`query-status`) in a `searchset`. */
export async function fhirSubscriptionStatus(ctx: ServiceContext, id: number) {
  const { row, fhir } = await requireFhirSubscription(ctx, id)
  return statusSearchset(statusFacts(row, fhir, 'query-status'))
}

export interface EventsQuery {
  eventsSinceNumber?: number
  eventsUntilNumber?: number
  content?: 'empty' | 'id-only' | 'full-resource'
}

/**
 * `$events`: the numbered events from `eventsSinceNumber` (default 1) to `eventsUntilNumber`
 * (default the last), at most EVENTS_PAGE_MAX, replayed from the change feed as a `history` Bundle
 * (`query-event`) with the payload content of the subscription unless `content` says otherwise.
 * Events the feed no longer retains, or the owner may no longer read, are left out.
 */
export async function fhirSubscriptionEvents(ctx: ServiceContext, id: number, q: EventsQuery) {
  const { row, fhir } = await requireFhirSubscription(ctx, id)
  const since = q.eventsSinceNumber ?? 1
  const until = Math.min(q.eventsUntilNumber ?? fhir.eventCount, fhir.eventCount, since + EVENTS_PAGE_MAX - 1)
  if (q.eventsUntilNumber !== undefined && q.eventsUntilNumber < since) {
    throw invalid([{ path: 'eventsUntilNumber', message: 'must not be less than eventsSinceNumber' }])
  }
  const logged = await ctx.db.all<{
    n: number
    type: string
    occurredAt: string
    panelId: number | null
    viewId: number | null
    data: string
  }>(sql`
    SELECT t.event_number AS n, e.type, e.occurred_at AS "occurredAt", e.panel_id AS "panelId", e.view_id AS "viewId", e.data
    FROM fhir_topic_events t JOIN events e ON e.tenant_id = ${row.tenantId} AND e.seq = t.event_seq
    WHERE t.subscription_id = ${id} AND t.event_number BETWEEN ${since} AND ${until}
    ORDER BY t.event_number`)
  const owner = ownerContext(ctx, row.tenantId, row.userId)
  const readable = readableMemo(owner)
  const patientColumn = row.panelId === null ? null : ((await loadWorkflow(ctx, row.panelId))?.patientReference ?? null)
  const events: TopicEvent[] = []
  for (const e of logged) {
    const scope = { type: e.type, panelId: nullable(e.panelId), viewId: nullable(e.viewId) }
    if (!(await readable(scope))) continue
    events.push(toTopicEvent(Number(e.n), { ...e, viewId: scope.viewId }, patientColumn))
  }
  const facts = { ...statusFacts(row, fhir, 'query-event'), events }
  return notificationBundle(facts, q.content ?? fhir.payload, isoNow(ctx.clock))
}

// --- Internal helpers ---

async function requireFhirSubscription(ctx: ServiceContext, id: number): Promise<{ row: SubscriptionRow; fhir: FhirRow }> {
  const [found] = await ctx.db
    .select({ row: subscriptions, fhir: fhirTopicSubscriptions })
    .from(subscriptions)
    .innerJoin(fhirTopicSubscriptions, eq(fhirTopicSubscriptions.subscriptionId, subscriptions.id))
    .where(and(eq(subscriptions.id, id), ownedBy(ctx)))
    .limit(1)
  if (!found) throw notFound('Subscription', id, ctx.scope.tenantId)
  return found
}

/**
 * The subscribed view, read as the subscription's owner will read it at delivery (no admin role,
 * no groups, no password): unknown or unreadable is a 404; a password-protected view a 400.
 */
async function readableView(ctx: ServiceContext, viewId: number): Promise<{ panelId: number }> {
  try {
    const view = await loadVisibleView(ownerContext(ctx, ctx.scope.tenantId, ctx.scope.userId), viewId)
    return { panelId: view.row.panelId }
  } catch (err) {
    if (err instanceof AppError && (err.code === 'VIEW_PASSWORD_REQUIRED' || err.code === 'VIEW_PASSWORD_INVALID')) {
      throw invalid(
        [
          {
            path: 'Subscription.criteria.extension',
            message: 'a password-protected view shared with you cannot be subscribed to',
          },
        ],
        'The Subscription is invalid',
      )
    }
    throw err
  }
}

function statusFacts(row: SubscriptionRow, fhir: FhirRow, type: StatusFacts['type']): StatusFacts {
  const base = fhir.topic.slice(0, fhir.topic.lastIndexOf('/SubscriptionTopic/'))
  return {
    base,
    subscriptionId: row.id,
    topic: fhir.topic,
    status: fhir.status,
    type,
    eventsSinceStart: fhir.eventCount,
    events: [],
    error: fhir.status === 'error' ? fhir.error : null,
  }
}

const nullable = (v: unknown) => (v === null || v === undefined ? null : Number(v))
