import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { dataSources } from './schema.ts'

/**
 * Working the list (WORKLIST.md, docs/worklist.md): a row's lasting identity with its work state,
 * and the comments left on it. Both belong to the identity (source + record key), not to a stored
 * record, so they outlive full syncs, recomputes and the row leaving the panel; they go with the
 * source (foreign key, cascade) and so with the panel.
 */

/**
 * One identity of a panel: `(data source, record key)`. Its id is the row's `_id`, the same for as
 * long as the identity stays in the panel. The work columns are the truth; each record of the
 * identity carries a JSON copy of them in `records.work` (rowstore/work-sql.ts), which the panel's
 * row index holds, so views filter and sort on work without a join.
 */
export const rowIdentities = sqliteTable(
  'row_identities',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    panelId: integer().notNull(),
    dataSourceId: integer()
      .notNull()
      .references(() => dataSources.id, { onDelete: 'cascade' }),
    key: text().notNull(),
    status: text().notNull().default('open'),
    assignee: text(),
    claimedAt: text(),
    /** Null with an assignee: held until released. */
    claimExpiresAt: text(),
    dueAt: text(),
    snoozedUntil: text(),
    /** +1 on every work change; 0 = never worked. The row's ETag is `"<version>"`. */
    version: integer().notNull().default(0),
    workUpdatedAt: text(),
    workUpdatedBy: text(),
    /** Comments not deleted. */
    commentCount: integer().notNull().default(0),
    /** When the identity first entered the panel in a write readers saw (the SLA counts from it). */
    enteredAt: text(),
    /** The `dueAt` whose `row.overdue` was emitted (exactly one per row and dueAt). */
    overdueFor: text(),
    /** The `snoozedUntil` whose end the scheduler step applied to the views. */
    wokenFor: text(),
    createdAt: text().notNull(),
  },
  (t) => [
    uniqueIndex('row_identities_source_key_idx').on(t.dataSourceId, t.key),
    index('row_identities_tenant_panel_idx').on(t.tenantId, t.panelId),
    // Only the due dates and snoozes the scheduler's time step still owes something (work-time.ts):
    // one it applied leaves the index, so a step reads what is left to do, not every past date.
    index('row_identities_due_idx').on(t.dueAt).where(sql`due_at IS NOT NULL AND overdue_for IS NOT due_at`),
    index('row_identities_snoozed_idx')
      .on(t.snoozedUntil)
      .where(sql`snoozed_until IS NOT NULL AND woken_for IS NOT snoozed_until`),
    index('row_identities_claim_idx').on(t.claimExpiresAt).where(sql`claim_expires_at IS NOT NULL`),
  ],
)

/** A comment on a row (its identity), newest last. Text is stored as given. */
export const rowComments = sqliteTable(
  'row_comments',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    panelId: integer().notNull(),
    rowId: integer()
      .notNull()
      .references(() => rowIdentities.id, { onDelete: 'cascade' }),
    authorId: text().notNull(),
    text: text().notNull(),
    createdAt: text().notNull(),
    updatedAt: text().notNull(),
  },
  (t) => [index('row_comments_row_idx').on(t.rowId, t.id)],
)
