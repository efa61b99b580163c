import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * The tables of panels, their sources, rows, columns, views, changes, notices, the read audit and
 * stored ViewDefinitions; the records a source gives (the rows) are in schema-records.ts, who read
 * what and wrong view passwords in schema-access.ts, the change feed's and outbound webhooks' tables
 * in schema-live.ts.
 * Timestamps are ISO 8601 UTC strings with milliseconds, so they sort as text and reach the wire
 * unchanged. JSON columns are `text({ mode: 'json' })`.
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

/** A panel's workflow (WORKLIST.md §2). */
export interface Workflow {
  statuses: { value: string; label: string; done: boolean }[]
  sla: { dueAfter: string } | null
  claimLeaseSeconds: number | null
  patientReference: string | null
}

export const timestamps = {
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
    /** How the list is worked (docs/worklist.md): statuses, SLA, claim lease, patient column; null = the defaults. */
    workflow: text({ mode: 'json' }).$type<Workflow>(),
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

/**
 * The upstream FHIR Subscription of a `fhir` source with `config.subscription` and the state of its
 * notifications (docs/connectors-fhir.md "Subscription mode"). The receiver finds a source by the
 * SHA-256 of its notification token; token and channel secret are stored encrypted. Several
 * instances may receive notifications: a notification's rows commit only with its claim on the counter.
 */
export const fhirSourceSubscriptions = sqliteTable(
  'fhir_source_subscriptions',
  {
    dataSourceId: integer()
      .primaryKey()
      .references(() => dataSources.id, { onDelete: 'cascade' }),
    tenantId: text().notNull(),
    /** Hex SHA-256 of the `{token}` of `/fhir-notify/{token}`. */
    tokenHash: text().notNull(),
    /** The token and the channel header's bearer secret, encrypted (`enc:v1:…`). */
    token: text().notNull(),
    secret: text().notNull(),
    /** What the upstream Subscription was made from (subscriptionSpec): a change replaces it. */
    spec: text().notNull(),
    /** The upstream Subscription's id and status; null id while none exists (creation failed). */
    upstreamId: text(),
    status: text().notNull().default('requested'),
    error: text(),
    /** The highest `events-since-subscription-start` seen (applied, or covered by a catch-up). */
    eventsSinceStart: integer().notNull().default(0),
    lastNotificationAt: text(),
    /** Every change up to this instant is applied: a catch-up searches `_lastUpdated=gt` it. */
    caughtUpAt: text().notNull(),
    /** A catch-up is owed (a gap, a restart, an error status, a notification met a running sync), from this instant. */
    catchUpFrom: text(),
    /**
     * The instant a running catch-up reads from. Given back as owed when its run ends without
     * success, or by the tick when the run died (the source's lease is free).
     */
    catchUpRunning: text(),
    /** When the running catch-up was taken: the tick gives it back a minute later if its run died. */
    catchUpTakenAt: text(),
    /**
     * The claim of the last notification written: its batch moves the counter and sets this, and
     * fails as a whole when another instance moved the counter first (a duplicate or a race).
     */
    lastClaim: text(),
    /** When the upstream Subscription was last read (the heartbeat check). */
    checkedAt: text(),
    ...timestamps,
  },
  (t) => [uniqueIndex('fhir_source_subscriptions_token_idx').on(t.tokenHash)],
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

export type SyncTrigger = 'create' | 'manual' | 'schedule' | 'webhook' | 'subscription'

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
    /**
     * A read that outlasts one invocation (a bulk export: status URL, manifest, position) saves its
     * progress here; a run holding the lease with a checkpoint is resumed, not recovered as crashed.
     * Cleared when the run ends.
     */
    checkpoint: text({ mode: 'json' }).$type<unknown>(),
  },
  (t) => [index('sync_runs_tenant_source_idx').on(t.tenantId, t.dataSourceId, t.id)],
)

/**
 * What an incremental read that applies at its end (a bulk export since its last transactionTime)
 * has read so far: its records in read order, kept apart from every generation until the read has
 * come to its end; then they are applied batch by batch and dropped (datasources.sync-stage.ts).
 */
export const syncStagedRecords = sqliteTable(
  'sync_staged_records',
  {
    runId: integer()
      .notNull()
      .references(() => syncRuns.id, { onDelete: 'cascade' }),
    seq: integer().notNull(),
    key: text(),
    data: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    deleted: integer({ mode: 'boolean' }).notNull().default(false),
  },
  (t) => [primaryKey({ columns: [t.runId, t.seq] })],
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
    /**
     * How many rows `view_members` holds for the view, kept by the same statements that move it
     * (rowstore/membership.ts); null until an evaluation counted them. A page's total reads it.
     */
    memberCount: integer(),
  },
  (t) => [index('views_tenant_user_idx').on(t.tenantId, t.userId), index('views_tenant_panel_idx').on(t.tenantId, t.panelId)],
)

export type ChangeEntity = 'Panel' | 'DataSource' | 'Column' | 'View' | 'row' | 'comment'
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

/** `mention`: a comment names the recipient (`@userId`; docs/worklist.md "Mentions"). */
export type NotificationType = 'VIEW_PUBLISHED' | 'VIEW_UPDATED' | 'DATA_CHANGED' | 'COLUMN_CHANGED' | 'mention'
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

export type ExportStatus = 'running' | 'completed' | 'failed' | 'cancelled'

/** What an export job was asked (its kick-off's Parameters, read and checked). */
export interface ExportRequestState {
  format: 'ndjson' | 'csv'
  header: boolean
  /** The data source read, and the generation that was current at kick-off (the export reads that one). */
  source?: { id: number; generation: number; panelId: number }
  /** The input sent inline, kept as a file of the job (`input.ndjson`) until it ends. */
  inline: boolean
  since?: string
  /** `Patient/<id>` keys of the `patient` parameters. */
  patients?: string[]
  clientTrackingId?: string
  /** Resources of the input, counted at kick-off (for X-Progress). */
  total: number
}

/** One view of an export: its output name, resource type, definition, and what has been written. */
export interface ExportViewState {
  name: string
  resource: string
  definition: Record<string, unknown>
  /** Part files written so far, and the rows in them. */
  parts: number
  rows: number
}

/** Where an export resumes: the view, and the input's position in it (last key read, or resources read). */
export interface ExportCursor {
  view: number
  after?: string
  read: number
  /** Resources read over all views (progress). */
  done: number
}

/**
 * Async `$viewdefinition-export` jobs (FHIR-EXCHANGE.md "Out 1"; docs/fhir.md): the state of each in
 * the database so any instance, tick or poll can carry it on. The lease (`leaseId` until
 * `leaseExpiresAt`) lets one runner at a time write its files. Files live in the file storage under
 * `exports/<id>/`; `expiresAt` (EXPORT_TTL_HOURS after the end) is when the maintenance tick removes
 * the job and its files.
 */
export const viewDefinitionExports = sqliteTable(
  'viewdefinition_exports',
  {
    id: text().primaryKey(),
    tenantId: text().notNull(),
    userId: text().notNull(),
    status: text().$type<ExportStatus>().notNull(),
    /** The kick-off request's URL, as the manifest's `request`. */
    request: text().notNull(),
    params: text({ mode: 'json' }).$type<ExportRequestState>().notNull(),
    views: text({ mode: 'json' }).$type<ExportViewState[]>().notNull(),
    cursor: text({ mode: 'json' }).$type<ExportCursor>().notNull(),
    error: text(),
    leaseId: text(),
    leaseExpiresAt: text(),
    /** The kick-off's instant: the manifest's `transactionTime`. */
    createdAt: text().notNull(),
    finishedAt: text(),
    expiresAt: text(),
  },
  (t) => [
    index('viewdefinition_exports_tenant_idx').on(t.tenantId, t.userId),
    index('viewdefinition_exports_status_idx').on(t.status, t.leaseExpiresAt),
  ],
)
