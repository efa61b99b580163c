import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { dataSources, timestamps } from './schema.ts'

/**
 * The records sources give, in generations: each stored as the panel's row(s) with its materialised
 * cells (the row store, src/rowstore/, writes them), and the resources a panel's ViewDefinition
 * holds apart. Apart from schema.ts, which holds the panels, sources, columns and views around them.
 */

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
    /** The row's lasting identity (`row_identities.id`): its `_id`. */
    rowId: integer(),
    /**
     * The identity's work state as JSON (rowstore/work-sql.ts `workJson`), null while never worked:
     * a copy kept with every write of the identity, so the row index holds it.
     */
    work: text(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('records_source_generation_key_idx').on(t.dataSourceId, t.generation, t.key),
    index('records_tenant_panel_idx').on(t.tenantId, t.panelId),
    index('records_row_idx').on(t.rowId),
    index('records_source_generation_record_key_idx')
      .on(t.dataSourceId, t.generation, t.recordKey)
      .where(sql`record_key IS NOT NULL`),
  ],
)

/**
 * A resource a panel's ViewDefinition gives no row (a `where` that excludes it, a `forEach` over
 * nothing), held in its generation so a replaced or removed view can store it again without
 * reading the source (docs/sql-on-fhir.md). No row reader reads this table: only the row store's
 * writers (rowstore/held.ts) and the recompute.
 */
export const heldRecords = sqliteTable(
  'held_records',
  {
    id: integer().primaryKey({ autoIncrement: true }),
    tenantId: text().notNull(),
    panelId: integer().notNull(),
    dataSourceId: integer()
      .notNull()
      .references(() => dataSources.id, { onDelete: 'cascade' }),
    generation: integer().notNull(),
    key: text().notNull(),
    data: text({ mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('held_records_source_generation_key_idx').on(t.dataSourceId, t.generation, t.key),
    index('held_records_tenant_panel_idx').on(t.tenantId, t.panelId),
  ],
)
