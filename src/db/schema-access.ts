import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Access to row-level data: the read audit (who read, exported or streamed which rows) and the
 * wrong-password counts that lock a caller out of a password-protected view. Apart from schema.ts.
 */

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
 * Wrong X-View-Password guesses per tenant, view and user (issue 20; views.password.ts). A guess
 * takes a slot with one atomic upsert before its password is checked, so parallel guesses and other
 * instances on the same database see one count; a right password gives its slot back. The window
 * starts at the first counted guess; rows past `windowEndsAt` are deleted by the scheduler.
 */
export const viewPasswordFailures = sqliteTable(
  'view_password_failures',
  {
    tenantId: text().notNull(),
    viewId: integer().notNull(),
    userId: text().notNull(),
    count: integer().notNull(),
    windowEndsAt: text().notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.viewId, t.userId] }),
    index('view_password_failures_window_idx').on(t.windowEndsAt),
  ],
)
