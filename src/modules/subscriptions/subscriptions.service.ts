import { and, count, desc, eq, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { subscriptionDeliveries, subscriptions } from '../../db/schema-live.ts'
import { AppError, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { checkTargets } from './subscriptions.access.ts'
import { sendAttempt } from './subscriptions.deliver.ts'
import { watchTenant } from './subscriptions.kick.ts'
import {
  ALL_EVENTS,
  type CreateSubscriptionInput,
  type DeliveriesInput,
  type DeliveryDto,
  type SubscriptionDto,
  type SubscriptionRow,
  toDeliveryDto,
  toSubscriptionDto,
  type UpdateSubscriptionInput,
} from './subscriptions.schemas.ts'
import { generateSecret } from './subscriptions.sign.ts'
import { requireDeliverableUrl } from './subscriptions.url.ts'

/**
 * Outbound webhook subscriptions (LIVE.md; docs/live.md "Outbound webhooks"): tenant-scoped and
 * owned by their creator — another user's or tenant's is a 404 that reveals nothing. Deliveries
 * are the queue's business (subscriptions.queue.ts); this module stores what to send where.
 */

/** The caller's webhook subscriptions (a FHIR topic subscription is the /fhir face's: fhir.subscription.service.ts). */
const ownedBy = (ctx: ServiceContext) =>
  and(
    eq(subscriptions.tenantId, ctx.scope.tenantId),
    eq(subscriptions.userId, ctx.scope.userId),
    eq(subscriptions.kind, 'webhook'),
  )

/** The caller's subscription, or a 404 naming it. */
export async function requireSubscription(ctx: ServiceContext, id: number): Promise<SubscriptionRow> {
  const [row] = await ctx.db
    .select()
    .from(subscriptions)
    .where(and(eq(subscriptions.id, id), ownedBy(ctx)))
    .limit(1)
  if (!row) throw notFound('Subscription', id, ctx.scope.tenantId)
  return row
}

/** The caller's subscriptions, newest first. */
export async function listSubscriptions(ctx: ServiceContext): Promise<{ subscriptions: SubscriptionDto[]; total: number }> {
  const rows = await ctx.db.select().from(subscriptions).where(ownedBy(ctx)).orderBy(desc(subscriptions.id))
  return { subscriptions: rows.map((r) => toSubscriptionDto(r)), total: rows.length }
}

/**
 * Stores a subscription. It receives the events committed after it (its cursor starts at the
 * tenant's last `seq`). The secret is sealed like data-source secrets; a generated one is answered
 * here once and never again.
 */
export async function createSubscription(ctx: ServiceContext, input: CreateSubscriptionInput): Promise<SubscriptionDto> {
  await requireDeliverableUrl(ctx, input.url)
  const target = { panelId: input.panelId ?? null, viewId: input.viewId ?? null }
  await checkTargets(ctx, target)
  const secret = input.secret ?? generateSecret()
  const now = isoNow(ctx.clock)
  const [row] = await ctx.db
    .insert(subscriptions)
    .values({
      tenantId: ctx.scope.tenantId,
      userId: ctx.scope.userId,
      url: input.url,
      events: normaliseEvents(input.events),
      ...target,
      description: input.description ?? null,
      secret: await ctx.secrets.encrypt(secret),
      active: input.active,
      cursorSeq: sql`(SELECT ifnull((SELECT last_seq FROM event_sequences WHERE tenant_id = ${ctx.scope.tenantId}), 0))`,
      createdAt: now,
      updatedAt: now,
    })
    .returning()
  if (row.active) watchTenant(ctx, row.tenantId)
  return toSubscriptionDto(row, input.secret === undefined ? secret : undefined)
}

/**
 * Changes the fields given. A changed `url`, `panelId` or `viewId` is checked as at creation;
 * `active: true` on a disabled subscription clears its reason and failure count, and its queue goes
 * on where it stopped. Filters apply to events the queue takes in from now on.
 */
export async function updateSubscription(ctx: ServiceContext, id: number, input: UpdateSubscriptionInput) {
  const row = await requireSubscription(ctx, id)
  if (input.url !== undefined) await requireDeliverableUrl(ctx, input.url)
  const target = {
    panelId: input.panelId === undefined ? row.panelId : input.panelId,
    viewId: input.viewId === undefined ? row.viewId : input.viewId,
  }
  if (target.panelId !== row.panelId || target.viewId !== row.viewId) await checkTargets(ctx, target)
  const patch: Partial<SubscriptionRow> = { ...target, updatedAt: isoNow(ctx.clock) }
  if (input.url !== undefined) patch.url = input.url
  if (input.events !== undefined) patch.events = normaliseEvents(input.events)
  if (input.description !== undefined) patch.description = input.description
  if (input.secret !== undefined) patch.secret = await ctx.secrets.encrypt(input.secret)
  if (input.active !== undefined && input.active !== row.active) {
    Object.assign(patch, { active: input.active, disabledReason: null, consecutiveFailures: 0 })
  }
  const [updated] = await ctx.db
    .update(subscriptions)
    .set(patch)
    .where(and(eq(subscriptions.id, id), ownedBy(ctx)))
    .returning()
  if (!updated) throw notFound('Subscription', id, ctx.scope.tenantId)
  if (updated.active) watchTenant(ctx, updated.tenantId)
  return toSubscriptionDto(updated)
}

/** Deletes the subscription with its queue and history. */
export async function deleteSubscription(ctx: ServiceContext, id: number): Promise<void> {
  await requireSubscription(ctx, id)
  await ctx.db.batch([
    ctx.db.delete(subscriptionDeliveries).where(eq(subscriptionDeliveries.subscriptionId, id)),
    ctx.db.delete(subscriptions).where(and(eq(subscriptions.id, id), ownedBy(ctx))),
  ])
}

/** The subscription's deliveries, newest first, each with its latest attempt; paged like the change feed. */
export async function listDeliveries(ctx: ServiceContext, id: number, q: DeliveriesInput) {
  await requireSubscription(ctx, id)
  const where: SQL | undefined = and(
    eq(subscriptionDeliveries.subscriptionId, id),
    q.status === undefined ? undefined : eq(subscriptionDeliveries.status, q.status),
  )
  const offset = q.offset ?? ((q.page ?? 1) - 1) * q.limit
  const [rows, [{ total }]] = await ctx.db.batch([
    ctx.db
      .select()
      .from(subscriptionDeliveries)
      .where(where)
      .orderBy(desc(subscriptionDeliveries.id))
      .limit(q.limit)
      .offset(offset),
    ctx.db.select({ total: count() }).from(subscriptionDeliveries).where(where),
  ])
  return { deliveries: rows.map(toDeliveryDto), total: Number(total), hasMore: offset + rows.length < Number(total) }
}

/**
 * `POST …/test`: sends a `ping` at once, outside the queue (it neither waits behind nor holds up
 * the queue's deliveries, and its failure does not count toward disabling), signed like every
 * delivery, also to an inactive subscription. The attempt is kept in the history and answered.
 */
export async function pingSubscription(ctx: ServiceContext, id: number): Promise<DeliveryDto> {
  const row = await requireSubscription(ctx, id)
  let secret: string
  try {
    secret = await ctx.secrets.decrypt(row.secret)
  } catch {
    throw new AppError('CONFLICT', 'The signing secret cannot be decrypted (was ENCRYPTION_KEY changed?); set a new one with PUT')
  }
  const deliveryId = crypto.randomUUID()
  const occurredAt = isoNow(ctx.clock)
  const event = {
    id: `ping-${deliveryId}`,
    type: 'ping',
    tenantId: row.tenantId,
    occurredAt,
    data: { subscriptionId: row.id, url: row.url },
  }
  const body = JSON.stringify(event)
  const outcome = await sendAttempt(ctx, {
    url: row.url,
    secret,
    body,
    eventId: event.id,
    eventType: 'ping',
    deliveryId,
    attempt: 1,
  })
  const at = isoNow(ctx.clock)
  const [delivery] = await ctx.db
    .insert(subscriptionDeliveries)
    .values({
      tenantId: row.tenantId,
      subscriptionId: row.id,
      deliveryId,
      eventSeq: null,
      eventType: 'ping',
      payload: body,
      status: outcome.ok ? 'delivered' : 'failed',
      attempts: 1,
      lastAttemptAt: at,
      statusCode: outcome.statusCode,
      durationMs: outcome.durationMs,
      error: outcome.error,
      history: [{ attempt: 1, at, statusCode: outcome.statusCode, durationMs: outcome.durationMs, error: outcome.error }],
      createdAt: occurredAt,
      updatedAt: at,
    })
    .returning()
  return toDeliveryDto(delivery)
}

/** `*` stands for every type; otherwise the types once each, in the order given. */
function normaliseEvents(events: readonly string[]): string[] {
  return events.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...new Set(events)]
}
