import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { timestamps } from './schema.ts'

/**
 * The tables of live panels (LIVE.md; docs/live.md): the change feed (`events`, `event_sequences`),
 * view membership and a write's scratch rows (`view_members`, `pending_changes`), and outbound
 * webhooks (`subscriptions`, `subscription_deliveries`). Same conventions as schema.ts.
 */

export type EventType =
  | 'row.entered'
  | 'row.left'
  | 'row.updated'
  | 'row.work_updated'
  | 'row.commented'
  | 'row.overdue'
  | 'panel.rows_changed'
  | 'sync.completed'
  | 'sync.failed'
  | 'view.updated'
  | 'view.published'
  | 'view.deleted'

/**
 * The change feed (LIVE.md; docs/live.md): one log per tenant, written by the row store in the
 * same transaction as the change that causes each event. `seq` is taken from `event_sequences` in
 * that transaction, so per tenant it grows by one with each event in commit order. `panel_id` and
 * `view_id` say who may read an event (the panel's owner; readers of the view).
 */
export const events = sqliteTable(
  'events',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    seq: integer().notNull(),
    type: text().$type<EventType>().notNull(),
    occurredAt: text().notNull(),
    panelId: integer(),
    viewId: integer(),
    dataSourceId: integer(),
    /** The event's `data` as JSON text. */
    data: text().notNull(),
  },
  (t) => [
    uniqueIndex('events_tenant_seq_idx').on(t.tenantId, t.seq),
    index('events_tenant_panel_idx').on(t.tenantId, t.panelId, t.seq),
    index('events_tenant_view_idx').on(t.tenantId, t.viewId, t.seq),
  ],
)

/** The last `seq` given per tenant: kept apart from `events` so retention can never reuse one. */
export const eventSequences = sqliteTable('event_sequences', {
  tenantId: text().primaryKey(),
  lastSeq: integer().notNull(),
})

/** How many order keys a membership row holds (rowstore/query/member-order.ts). */
export const ORDER_KEY_COUNT = 8

export const ORDER_KEY_NAMES = Array.from({ length: ORDER_KEY_COUNT }, (_, i) => `s${i}`)

/**
 * The order keys of a view's member (`s0` … `s7`): the view's sort terms, each made ascending
 * (member-order.ts), stored as the values are (no affinity: a text stays text, a number a number).
 */
const orderKeys = {
  s0: blob(),
  s1: blob(),
  s2: blob(),
  s3: blob(),
  s4: blob(),
  s5: blob(),
  s6: blob(),
  s7: blob(),
}

/** Group keys and aggregation inputs a member holds (rowstore/query/member-summary.ts). */
export const SUMMARY_GROUP_COUNT = 4
export const SUMMARY_INPUT_COUNT = 4
export const SUMMARY_NAMES = [
  ...Array.from({ length: SUMMARY_GROUP_COUNT }, (_, i) => `g${i}`),
  ...Array.from({ length: SUMMARY_INPUT_COUNT }, (_, i) => `a${i}`),
  'sm',
]

/**
 * What a member of a view with groups or aggregations holds for them (member-summary.ts): the
 * value of each group column (`g0` …) and of each aggregated column with blanks as null (`a0` …),
 * as the cells hold them (no affinity), and `sm` = 1, so the view's summary is a read of its members
 * through `view_members_summary_idx` rather than of the panel's records.
 */
const summaryValues = {
  g0: blob(),
  g1: blob(),
  g2: blob(),
  g3: blob(),
  a0: blob(),
  a1: blob(),
  a2: blob(),
  a3: blob(),
  sm: integer(),
}

/**
 * View membership as data (LIVE.md; docs/live.md "Membership"): the rows each view matched after
 * the last write that touched them, by stable identity (source, record key), with the row as the
 * view showed it then (the `row` of `row.left`, the `from` of `row.updated`).
 */
export const viewMembers = sqliteTable(
  'view_members',
  {
    viewId: integer().notNull(),
    dataSourceId: integer().notNull(),
    key: text().notNull(),
    tenantId: text().notNull(),
    panelId: integer().notNull(),
    rowId: integer().notNull(),
    /** The row as `GET /api/views/{id}/rows` showed it (JSON text). */
    row: text().notNull(),
    ...orderKeys,
    ...summaryValues,
  },
  (t) => [
    primaryKey({ columns: [t.viewId, t.dataSourceId, t.key] }),
    // A summarised view's groups and aggregations read from this index alone (member-summary.ts).
    index('view_members_summary_idx')
      .on(t.viewId, ...['g0', 'g1', 'g2', 'g3'].map((k) => sql`${sql.identifier(k)} COLLATE NOCASE`), t.a0, t.a1, t.a2, t.a3)
      .where(sql`sm = 1`),
    index('view_members_panel_idx').on(t.panelId, t.dataSourceId, t.key),
    // A view's page is a walk of this index (rowstore/query/member-order.ts): its order keys, then the lasting row id.
    index('view_members_order_idx').on(
      t.viewId,
      ...ORDER_KEY_NAMES.map((k) => sql`${sql.identifier(k)} COLLATE NOCASE`),
      t.rowId,
    ),
  ],
)

/**
 * Scratch rows of one write (one transaction, removed by its last statement): which identities
 * the write changed (`view_id` 0) and how each view's membership moves. Never read outside the
 * transaction that wrote them; a table, not connection state, so it works on D1 and fresh
 * connections alike.
 */
export const pendingChanges = sqliteTable(
  'pending_changes',
  {
    token: text().notNull(),
    viewId: integer().notNull(),
    dataSourceId: integer().notNull(),
    key: text().notNull(),
    /** Identity level: inserted | updated | deleted. View level: entered | left | updated. */
    kind: text().notNull(),
    rowId: integer(),
    row: text(),
    changed: text(),
    /** A view's moves: the member's order keys and summary values (view_members `s0` …, `g0` …). */
    ...orderKeys,
    ...summaryValues,
  },
  (t) => [primaryKey({ columns: [t.token, t.viewId, t.dataSourceId, t.key] })],
)

/**
 * Outbound webhook subscriptions (LIVE.md; docs/live.md "Outbound webhooks"): an owner's endpoint
 * that receives the events it selects and its owner may read. `cursorSeq` is the last event `seq`
 * of the tenant the queue has looked at (enqueued or passed over); the lease says which runner
 * holds the subscription's queue, so several instances never send its deliveries twice.
 */
export const subscriptions = sqliteTable(
  'subscriptions',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    /** The owner (creator): deliveries carry only events this user may read. */
    userId: text().notNull(),
    /** `webhook` (the JSON API's) or `fhir-topic` (a FHIR backport Subscription: fhirTopicSubscriptions). */
    kind: text().$type<SubscriptionKind>().notNull().default('webhook'),
    url: text().notNull(),
    /** Event types, or `['*']` for every type. */
    events: text({ mode: 'json' }).$type<string[]>().notNull(),
    panelId: integer(),
    viewId: integer(),
    description: text(),
    /** The signing secret, encrypted (`enc:v1:…`); never answered after creation. */
    secret: text().notNull(),
    active: integer({ mode: 'boolean' }).notNull().default(true),
    disabledReason: text(),
    /** Deliveries ended `failed` in a row (a success resets it); WEBHOOK_DISABLE_AFTER disables. */
    consecutiveFailures: integer().notNull().default(0),
    cursorSeq: integer().notNull().default(0),
    leaseToken: text(),
    leaseExpiresAt: text(),
    ...timestamps,
  },
  (t) => [
    index('subscriptions_tenant_user_idx').on(t.tenantId, t.userId),
    index('subscriptions_active_idx').on(t.active, t.tenantId),
  ],
)

export type SubscriptionKind = 'webhook' | 'fhir-topic'

/** A FHIR Subscription's own status (R4 Subscription.status; the backport IG's handshake decides). */
export type FhirSubscriptionStatus = 'requested' | 'active' | 'error' | 'off'

/** What a FHIR topic notification carries beside its SubscriptionStatus (the backport payload-content). */
export type FhirPayloadContent = 'empty' | 'id-only' | 'full-resource'

/**
 * The FHIR side of a `fhir-topic` subscription (docs/fhir.md "View membership as a topic"): one row
 * per `subscriptions` row of that kind, which holds the endpoint, owner, view, event types, cursor
 * and lease, so the same queue delivers it. `eventCount` is `events-since-subscription-start`: the
 * last event number given (fhirTopicEvents).
 */
export const fhirTopicSubscriptions = sqliteTable('fhir_topic_subscriptions', {
  subscriptionId: integer()
    .primaryKey()
    .references(() => subscriptions.id, { onDelete: 'cascade' }),
  tenantId: text().notNull(),
  status: text().$type<FhirSubscriptionStatus>().notNull(),
  payload: text().$type<FhirPayloadContent>().notNull(),
  /** The topic canonical as the client sent it. */
  topic: text().notNull(),
  /** The filter-criteria values as sent (`Group?_id=…`, `Group?membership-event=…`). */
  filters: text({ mode: 'json' }).$type<string[]>().notNull(),
  heartbeatSeconds: integer(),
  timeoutSeconds: integer(),
  /** channel.header, encrypted (`enc:v1:…`): they may hold the receiver's credentials. */
  headers: text(),
  /** R4 Subscription.end, reason and the client's other fields as sent (JSON text). */
  resource: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
  eventCount: integer().notNull().default(0),
  /** When the last notification was delivered (or the subscription created): the heartbeat's clock. */
  lastSentAt: text().notNull(),
  /** Why the status is `error`, as the SubscriptionStatus `error` says it. */
  error: text(),
  ...timestamps,
})

/**
 * The event numbers of a `fhir-topic` subscription: each event of the log the queue takes in for it
 * gets the next number, in the same statement batch as the delivery, so numbers start at 1 and rise
 * by one without gaps, whichever instance takes them. `$events` replays from here.
 */
export const fhirTopicEvents = sqliteTable(
  'fhir_topic_events',
  {
    subscriptionId: integer()
      .notNull()
      .references(() => subscriptions.id, { onDelete: 'cascade' }),
    eventNumber: integer().notNull(),
    eventSeq: integer().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.subscriptionId, t.eventNumber] }),
    uniqueIndex('fhir_topic_events_seq_idx').on(t.subscriptionId, t.eventSeq),
  ],
)

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'skipped'

/**
 * The durable delivery queue and its history: one row per (subscription, event), sent in `id`
 * order (= `seq` order) per subscription; a `pending` row at the head holds the rows behind it.
 * `payload` is set only for events that are not in the log (the `ping` of the test route, the
 * `events.expired` notice); log events are read from `events` when sent.
 */
/** One attempt of an outbound delivery, as its history keeps it. */
export interface DeliveryAttempt {
  attempt: number
  at: string
  statusCode: number | null
  durationMs: number | null
  error: string | null
}

export const subscriptionDeliveries = sqliteTable(
  'subscription_deliveries',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    subscriptionId: integer()
      .notNull()
      .references(() => subscriptions.id, { onDelete: 'cascade' }),
    /** X-Delivery-Id: the same on every attempt of this delivery. */
    deliveryId: text().notNull(),
    eventSeq: integer(),
    eventType: text().notNull(),
    payload: text(),
    status: text().$type<DeliveryStatus>().notNull(),
    attempts: integer().notNull().default(0),
    nextAttemptAt: text(),
    lastAttemptAt: text(),
    statusCode: integer(),
    durationMs: integer(),
    error: text(),
    /** Every attempt, oldest first (at most MAX_ATTEMPTS): `[{ attempt, at, statusCode, durationMs, error }]`. */
    history: text({ mode: 'json' }).$type<DeliveryAttempt[]>(),
    ...timestamps,
  },
  (t) => [
    index('subscription_deliveries_queue_idx').on(t.subscriptionId, t.status, t.id),
    uniqueIndex('subscription_deliveries_event_idx').on(t.subscriptionId, t.eventSeq),
    index('subscription_deliveries_updated_idx').on(t.updatedAt),
  ],
)
