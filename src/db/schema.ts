import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * Every table of the service. Timestamps are ISO 8601 UTC strings with milliseconds, so they sort
 * as text and reach the wire unchanged. JSON columns are `text({ mode: 'json' })`.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

export interface CohortCondition {
  field: string
  operator: string
  value?: unknown
}

export interface CohortRule {
  conditions: CohortCondition[]
  /** AND or OR in either case, as sent. */
  logic: 'AND' | 'OR' | 'and' | 'or'
}

const timestamps = {
  createdAt: text().notNull(),
  updatedAt: text().notNull(),
}

/** A panel; its one cohort rule is stored with it (spec §2.1–2.2: created together, one per panel). */
export const panels = sqliteTable(
  'panels',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    userId: text().notNull(),
    name: text().notNull(),
    description: text(),
    metadata: text({ mode: 'json' }).$type<Record<string, unknown>>(),
    cohortRule: text({ mode: 'json' }).$type<CohortRule>().notNull(),
    /** Bumped by every column change (in the change's batch). */
    columnsVersion: integer().notNull().default(0),
    /** The columns version every row's cells were last recomputed with; behind columnsVersion = stale. */
    materialisedVersion: integer().notNull().default(0),
    /** The published view marked `isDefault` (issue 12): at most one per panel. */
    defaultViewId: integer(),
    /**
     * The SQL-on-FHIR ViewDefinition the panel is defined by (docs/sql-on-fhir.md, "Panels defined by
     * a ViewDefinition"), as it was put; null for a panel of one row per record.
     */
    viewDefinition: text({ mode: 'json' }).$type<Record<string, unknown>>(),
    /** The one data source whose records the view expands; null: every source of the panel. */
    viewDataSourceId: integer(),
    ...timestamps,
    deletedAt: text(),
  },
  (t) => [
    index('panels_tenant_user_idx').on(t.tenantId, t.userId),
    index('panels_tenant_created_idx').on(t.tenantId, t.createdAt),
  ],
)

export type SyncStatus = 'pending' | 'syncing' | 'success' | 'error' | 'cancelled'

export const dataSources = sqliteTable(
  'data_sources',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    userId: text().notNull(),
    panelId: integer()
      .notNull()
      .references(() => panels.id),
    type: text().notNull(),
    /** Config with secrets encrypted (`enc:v1:…`); answered with "<SECRET>" in their place. */
    config: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    syncStatus: text().$type<SyncStatus>().notNull().default('pending'),
    errorMessage: text(),
    lastSyncAt: text(),
    nextSyncAt: text(),
    /** The generation of records readers see (DATA-ENGINE: generation switch). */
    currentGeneration: integer().notNull().default(0),
    /**
     * A digest of the current generation's rows (keys, cells, errors) as the full sync that wrote it
     * computed them; null when unknown or when anything rewrote rows in place since (a recompute, an
     * incremental write). A full sync whose rows have the same digest changed nothing: it lists no
     * identities for the views' membership (src/rowstore/digest.ts).
     */
    generationDigest: text(),
    /** Lease: the run holding the source and until when (DATA-ENGINE: one runner at a time). */
    leaseRunId: integer(),
    leaseExpiresAt: text(),
    /** Webhook sources: the `{endpoint}` of `POST /api/webhooks/{endpoint}`, unique service-wide. */
    webhookEndpoint: text(),
    ...timestamps,
  },
  (t) => [
    index('data_sources_tenant_panel_idx').on(t.tenantId, t.panelId),
    index('data_sources_next_sync_idx').on(t.nextSyncAt),
    uniqueIndex('data_sources_webhook_endpoint_idx').on(t.webhookEndpoint),
  ],
)

/** Webhook event ids already applied, so a redelivered event is acknowledged and not applied twice. */
export const webhookEvents = sqliteTable(
  'webhook_events',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    dataSourceId: integer()
      .notNull()
      .references(() => dataSources.id, { onDelete: 'cascade' }),
    eventId: text().notNull(),
    receivedAt: text().notNull(),
  },
  (t) => [uniqueIndex('webhook_events_source_event_idx').on(t.dataSourceId, t.eventId)],
)

export type SyncTrigger = 'create' | 'manual' | 'schedule' | 'webhook'

export const syncRuns = sqliteTable(
  'sync_runs',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    dataSourceId: integer()
      .notNull()
      .references(() => dataSources.id, { onDelete: 'cascade' }),
    status: text().$type<SyncStatus>().notNull(),
    trigger: text().$type<SyncTrigger>().notNull(),
    generation: integer().notNull(),
    startedAt: text().notNull(),
    finishedAt: text(),
    durationMs: integer(),
    rowsRead: integer().notNull().default(0),
    rowsWritten: integer().notNull().default(0),
    rowsDeleted: integer().notNull().default(0),
    truncated: integer({ mode: 'boolean' }).notNull().default(false),
    cancelRequested: integer({ mode: 'boolean' }).notNull().default(false),
    error: text(),
  },
  (t) => [index('sync_runs_tenant_source_idx').on(t.tenantId, t.dataSourceId, t.id)],
)

/** A record read from a source: `{ key, data }` in one generation of that source. */
export const records = sqliteTable(
  'records',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    panelId: integer().notNull(),
    dataSourceId: integer()
      .notNull()
      .references(() => dataSources.id, { onDelete: 'cascade' }),
    generation: integer().notNull(),
    key: text().notNull(),
    /**
     * A row of a panel defined by a ViewDefinition: the key of the record (resource) it was expanded
     * from, `key` being `<recordKey>#<position>`; null for the one row of a record.
     */
    recordKey: text(),
    data: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    /** The row: materialised cells keyed by column id (DATA-ENGINE: Rows). */
    cells: text({ mode: 'json' }).$type<Record<string, unknown>>(),
    /** Per-cell errors `{ column, code, message }[]`, null when none. */
    errors: text({ mode: 'json' }).$type<{ column: string; code: string; message: string }[]>(),
    /** The panel's columnsVersion the cells were computed with. */
    cellsVersion: integer().notNull().default(0),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('records_source_generation_key_idx').on(t.dataSourceId, t.generation, t.key),
    index('records_tenant_panel_idx').on(t.tenantId, t.panelId),
    index('records_source_generation_record_key_idx')
      .on(t.dataSourceId, t.generation, t.recordKey)
      .where(sql`record_key IS NOT NULL`),
  ],
)

export type ColumnKind = 'base' | 'calculated'

/** Base and calculated columns share this table and so one id space (CONTRACT: Columns). */
export const columns = sqliteTable(
  'columns',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    userId: text().notNull(),
    panelId: integer()
      .notNull()
      .references(() => panels.id),
    columnType: text().$type<ColumnKind>().notNull(),
    name: text().notNull(),
    type: text().notNull(),
    sourceField: text(),
    fhirPath: text(),
    /** Which path a base column reads by: the one its creator gave (docs/views-and-rows.md "Exact values"). */
    readBy: text().$type<'fhirPath' | 'sourceField'>(),
    dataSourceId: integer(),
    formula: text(),
    dependencies: text({ mode: 'json' }).$type<string[]>(),
    properties: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    metadata: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    ...timestamps,
  },
  (t) => [index('columns_tenant_panel_idx').on(t.tenantId, t.panelId)],
)

/** A view filter: a condition (column, operator, value) or a group of `conditions`, spelled as sent. */
export interface FilterCriterion {
  columnTitle?: string
  operator?: string
  value?: unknown
  logicalOperator?: string
  conditions?: FilterCriterion[]
}

export interface SortCriterion {
  columnTitle: string
  direction: 'asc' | 'desc'
  priority?: number
  nullsFirst?: boolean
  customOrder?: string[]
}

export interface AggregationSpec {
  columnTitle: string
  function: 'count' | 'sum' | 'average' | 'min' | 'max' | 'median' | 'distinct'
  alias?: string
}

export interface ViewConfig {
  columns: string[]
  groupBy: string[]
  layout: string
  [key: string]: unknown
}

/** A view; its sort and filter records are the `sorting` and `filters` lists (CONTRACT: Views). */
export const views = sqliteTable(
  'views',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    userId: text().notNull(),
    panelId: integer()
      .notNull()
      .references(() => panels.id),
    name: text().notNull(),
    description: text().notNull().default(''),
    config: text({ mode: 'json' }).$type<ViewConfig>().notNull(),
    metadata: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    filters: text({ mode: 'json' }).$type<FilterCriterion[]>().notNull(),
    sorting: text({ mode: 'json' }).$type<SortCriterion[]>().notNull(),
    columnVisibility: text({ mode: 'json' }).$type<Record<string, boolean>>().notNull(),
    aggregations: text({ mode: 'json' }).$type<AggregationSpec[]>().notNull(),
    isPublished: integer({ mode: 'boolean' }).notNull().default(false),
    publishedAt: text(),
    publishedBy: text(),
    publishConfig: text({ mode: 'json' }).$type<Record<string, unknown>>(),
    /** The published view this one was copied from with the `create` permission (issue 12); its rows stay within it. */
    sourceViewId: integer(),
    ...timestamps,
    accessedAt: text(),
    /**
     * What `view_members` was last evaluated with (the view's row query and columns, hashed); null
     * until the first evaluation. A write that finds it different re-evaluates the membership
     * silently (one `view.updated`, no `row.*` events; LIVE.md).
     */
    membershipKey: text(),
  },
  (t) => [index('views_tenant_user_idx').on(t.tenantId, t.userId), index('views_tenant_panel_idx').on(t.tenantId, t.panelId)],
)

export type ChangeEntity = 'Panel' | 'DataSource' | 'Column' | 'View'
export type ChangeAction = 'CREATE' | 'UPDATE' | 'DELETE' | 'PUBLISH' | 'SYNC'
export type FieldChanges = Record<string, { oldValue?: unknown; newValue?: unknown }>

export interface ChangeMetadata {
  userAgent?: string
  ipAddress?: string
  source: 'api' | 'system' | 'web'
  [key: string]: unknown
}

/** Change records (spec §6.1); never deleted, not even with their panel. */
export const changes = sqliteTable(
  'changes',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    userId: text().notNull(),
    panelId: integer().notNull(),
    entityType: text().$type<ChangeEntity>().notNull(),
    entityId: integer().notNull(),
    action: text().$type<ChangeAction>().notNull(),
    changes: text({ mode: 'json' }).$type<FieldChanges>().notNull(),
    metadata: text({ mode: 'json' }).$type<ChangeMetadata>().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [
    index('changes_tenant_created_idx').on(t.tenantId, t.createdAt),
    index('changes_tenant_panel_idx').on(t.tenantId, t.panelId, t.createdAt),
  ],
)

export type NotificationType = 'VIEW_PUBLISHED' | 'VIEW_UPDATED' | 'DATA_CHANGED' | 'COLUMN_CHANGED'
export type NotificationImpact = 'info' | 'warning' | 'breaking'

export const notifications = sqliteTable(
  'notifications',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    /** The recipient. */
    userId: text().notNull(),
    viewId: integer().notNull(),
    type: text().$type<NotificationType>().notNull(),
    impact: text().$type<NotificationImpact>().notNull(),
    message: text().notNull(),
    isRead: integer({ mode: 'boolean' }).notNull().default(false),
    /** Set for notifications that must exist once (a publish): a unique key per recipient. */
    dedupeKey: text(),
    createdAt: text().notNull(),
    readAt: text(),
  },
  (t) => [
    index('notifications_tenant_user_idx').on(t.tenantId, t.userId, t.isRead, t.createdAt),
    uniqueIndex('notifications_dedupe_idx').on(t.tenantId, t.userId, t.dedupeKey),
  ],
)

export type AccessAction = 'read' | 'export' | 'stream' | 'import'
export type AccessOutcome = 'success' | 'invalid' | 'denied' | 'not_found' | 'cancelled' | 'failed'

/**
 * Access records (issue 12 point 6; docs/audit.md): one per request that reads row-level data or
 * is refused on such a route. Kept AUDIT_RETENTION_DAYS, then deleted by the scheduler; never
 * changed. Ids grow with time, which the retention step relies on (it deletes from the lowest id).
 */
export const accessRecords = sqliteTable(
  'access_records',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    at: text().notNull(),
    tenantId: text().notNull(),
    /** The authenticated user (the token's), never a user the request names. */
    userId: text().notNull(),
    action: text().$type<AccessAction>().notNull(),
    /** Null when the request named no panel or view of the caller's tenant. */
    panelId: integer(),
    viewId: integer(),
    dataSourceId: integer(),
    rowCount: integer().notNull(),
    query: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    /** The request path as sent (a refused id of another tenant is kept only here). */
    path: text().notNull(),
    requestId: text().notNull(),
    ip: text(),
    userAgent: text(),
    outcome: text().$type<AccessOutcome>().notNull(),
    status: integer().notNull(),
    errorCode: text(),
  },
  (t) => [
    index('access_records_tenant_at_idx').on(t.tenantId, t.at),
    index('access_records_tenant_user_idx').on(t.tenantId, t.userId, t.at),
    index('access_records_tenant_panel_idx').on(t.tenantId, t.panelId, t.at),
    index('access_records_tenant_view_idx').on(t.tenantId, t.viewId, t.at),
  ],
)

/**
 * Stored SQL-on-FHIR ViewDefinitions (SQL-ON-FHIR.md, "Stored ViewDefinitions"; issue 14): valid
 * when stored (never an invalid one), owned by their creator within the tenant. `definition` is
 * the view as sent, without `id` and `meta`, which are this row's.
 */
export const viewDefinitions = sqliteTable(
  'view_definitions',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    userId: text().notNull(),
    /** The view's `name` and `resource`, copied out for the list's filters. */
    name: text(),
    resource: text().notNull(),
    definition: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    ...timestamps,
  },
  (t) => [index('view_definitions_tenant_user_idx').on(t.tenantId, t.userId, t.resource)],
)

export type EventType =
  | 'row.entered'
  | 'row.left'
  | 'row.updated'
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
  },
  (t) => [
    primaryKey({ columns: [t.viewId, t.dataSourceId, t.key] }),
    index('view_members_panel_idx').on(t.panelId, t.dataSourceId, t.key),
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
