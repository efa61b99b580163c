import type { D1Database } from '@cloudflare/workers-types/index.ts'
import { drizzle } from 'drizzle-orm/d1'
import type { Db } from '../db/client.ts'
import * as schema from '../db/schema.ts'

/** What drizzle-orm/d1's `batch` calls on each item: `_prepare()` yields the statement to bind. */
interface BatchItem {
  _prepare(): { stmt?: unknown; getQuery?: () => { sql: string } }
}

/**
 * The D1 database behind the `Db` type, with the same schema and `casing` as src/db/client.ts.
 *
 * `Db` is the libSQL drizzle type; drizzle's D1 database has the same query API
 * (select/insert/update/delete/batch/run/all) and the services read both shapes of write results
 * (`lastInsertRowid` / `meta.last_row_id`, `rowsAffected` / `meta.changes`), so the cast below is
 * the one place the two types meet.
 *
 * One gap is closed here: drizzle-orm/d1's `batch` (0.45) binds parameters on `_prepare().stmt`,
 * which raw `db.run(sql\`…\`)` items do not have, so a batch holding a raw statement with
 * parameters threw "Cannot read properties of undefined (reading 'bind')". Such items get their
 * D1 statement before the batch runs; everything else is drizzle's own code.
 */
export function d1Db(binding: D1Database): Db {
  const db = drizzle(binding as never, { schema, casing: 'snake_case' })
  const batch = db.batch.bind(db)
  db.batch = ((items: BatchItem[]) => {
    for (const item of items) {
      const prepared = item._prepare()
      if (prepared.stmt === undefined && prepared.getQuery) prepared.stmt = binding.prepare(prepared.getQuery().sql)
    }
    return batch(items as never)
  }) as typeof db.batch
  return db as unknown as Db
}
