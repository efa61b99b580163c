// biome-ignore lint/style/noRestrictedImports: a type-only import; no client is made here
import type { Client } from '@libsql/client'
import { is, SQL } from 'drizzle-orm'
import type { BatchItem } from 'drizzle-orm/batch'
import { drizzle } from 'drizzle-orm/libsql'
import * as core from './schema.ts'
import * as access from './schema-access.ts'
import * as live from './schema-live.ts'
import * as stored from './schema-records.ts'
import * as work from './schema-work.ts'

const schema = { ...core, ...stored, ...access, ...live, ...work }

/** Wraps a libSQL client made by a runtime entry; never makes a client itself. */
export function createDb(client: Client) {
  return drizzle(client, { schema, casing: 'snake_case' })
}

/**
 * The database services depend on: libSQL (file, memory, Turso) or D1 — both SQLite, both with
 * `batch`. The D1 variant is produced in `src/runtime/workers.ts` with the same schema and casing.
 */
export type Db = ReturnType<typeof createDb>

/** Rows a write changed: libSQL reports `rowsAffected`, D1 (Workers) `meta.changes`. */
export const rowsAffected = (result: unknown): number =>
  Number((result as { rowsAffected?: number }).rowsAffected ?? (result as { meta?: { changes?: number } }).meta?.changes ?? 0)

/** The id an INSERT gave its row: libSQL reports `lastInsertRowid`, D1 (Workers) `meta.last_row_id`. */
export const insertedId = (result: unknown): number =>
  Number(
    (result as { lastInsertRowid?: bigint | number }).lastInsertRowid ??
      (result as { meta?: { last_row_id?: number } }).meta?.last_row_id,
  )

/** One statement of a `runBatch`: raw SQL, or any drizzle query on this database (a builder, `db.run(sql)`). */
export type BatchStatement = SQL | BatchItem<'sqlite'>

/**
 * Runs `statements` in one `db.batch` (one transaction on libSQL and D1), in order; raw SQL runs as
 * `db.run`. `db.batch` is typed for a non-empty tuple written out in place; a list built at run time
 * (spread, mapped, filtered) goes through here instead, and its results are not typed per statement.
 */
export function runBatch(db: Db, statements: readonly BatchStatement[]): Promise<readonly unknown[]> {
  const items = statements.map((s) => (is(s, SQL) ? db.run(s) : s))
  return db.batch(items as unknown as Readonly<[BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]]>)
}
