import type { D1Database, D1PreparedStatement, D1Result } from '@cloudflare/workers-types/index.ts'
import { drizzle } from 'drizzle-orm/d1'
import type { Db } from '../db/client.ts'
import * as core from '../db/schema.ts'
import * as access from '../db/schema-access.ts'
import * as live from '../db/schema-live.ts'
import * as stored from '../db/schema-records.ts'
import * as work from '../db/schema-work.ts'

/**
 * What drizzle-orm/d1's own `batch` uses of each item (0.45): `_prepare()` gives the prepared
 * query, whose `getQuery()` is the SQL with its parameters, whose `fields` (for a select) are the
 * selected columns in order, and whose `mapResult(result, true)` turns D1's batch result into rows.
 */
interface BatchItem {
  _prepare(): PreparedItem
}
interface PreparedItem {
  getQuery(): { sql: string; params: unknown[] }
  fields?: unknown[]
  mapResult(result: D1Result, isFromBatch: boolean): unknown
}

/**
 * The D1 database behind the `Db` type, with the same schema and `casing` as src/db/client.ts.
 *
 * `Db` is the libSQL drizzle type; drizzle's D1 database has the same query API
 * (select/insert/update/delete/batch/run/all) and the services read both shapes of write results
 * (`lastInsertRowid` / `meta.last_row_id`, `rowsAffected` / `meta.changes`), so the cast below is
 * the one place the two types meet.
 *
 * `batch` is drizzle's own loop (prepare each item, one `D1Database.batch`, map each result) with
 * two differences that make it behave as on libSQL:
 *
 * - **Selects map by position, whatever their column names.** D1's `batch` answers rows as objects
 *   keyed by column name, and drizzle maps a select's row by position over `Object.keys(row)`. A
 *   joined select has duplicate names (`views.id`, `panels.id`; `name`, …): the object keeps one
 *   value per name, every later column shifts, and a view listed with its panel came back with
 *   the panel's fields. Each select with mapped fields is therefore run as
 *   `WITH r(c0, c1, …) AS (<select>) SELECT * FROM r`: the CTE's column list renames the columns
 *   by position (SQLite keeps the inner ORDER BY/LIMIT), so every name is unique and the object's
 *   key order is the select's column order. Outside `batch` drizzle-orm/d1 already reads arrays
 *   (`raw()`), so only batches needed this; every joined select of src/ goes through here.
 * - **Raw statements get bound.** drizzle binds parameters on `_prepare().stmt`, which raw
 *   `db.run(sql\`…\`)` items lack ("Cannot read properties of undefined (reading 'bind')"): every
 *   statement is prepared here from its SQL instead.
 */
export function d1Db(binding: D1Database): Db {
  const db = drizzle(binding as never, { schema: { ...core, ...stored, ...access, ...live, ...work }, casing: 'snake_case' })
  db.batch = (async (items: BatchItem[]) => {
    const prepared = items.map((item) => item._prepare())
    const results = await binding.batch(prepared.map((p) => statementOf(binding, p)))
    return results.map((result, i) => prepared[i].mapResult(result, true))
  }) as unknown as typeof db.batch
  return db as unknown as Db
}

// --- Internal helpers ---

const SELECT = /^\s*(select|with)\b/i

/** The D1 statement of one batch item; a select with mapped fields gets positional column names. */
function statementOf(binding: D1Database, prepared: PreparedItem): D1PreparedStatement {
  const { sql, params } = prepared.getQuery()
  const width = prepared.fields?.length ?? 0
  const text =
    width > 0 && SELECT.test(sql)
      ? `WITH r(${Array.from({ length: width }, (_, i) => `c${i}`).join(', ')}) AS (${sql}) SELECT * FROM r`
      : sql
  return binding.prepare(text).bind(...params)
}
