import { type SQL, sql } from 'drizzle-orm'
import type { views } from './schema.ts'

/** Who asks (a service context fits): the user and groups of its scope, and the clock. */
export interface Viewer {
  scope: { userId: string; groups: readonly string[] }
  clock: { now(): Date }
}

/**
 * SQL: the publish settings of `v` (a views table or alias) keep the caller out although it is
 * published — it names groups the caller shares none of, or its `expiresAt` has passed (until the
 * read that ends it). For lists and notifications, which must not show such a view.
 */
export function sharedAway(ctx: Viewer, v: typeof views | string): SQL {
  const col = (name: string) => (typeof v === 'string' ? sql.raw(`${v}.${name}`) : sql.raw(`"views"."${name}"`))
  const config = col('publish_config')
  // Every part is made 0/1 (a missing setting reads NULL in SQLite, and NOT NULL would hide the view).
  return sql`(${col('user_id')} <> ${ctx.scope.userId} AND (
    (ifnull(json_array_length(${config}, '$.userGroups'), 0) > 0 AND NOT EXISTS (
      SELECT 1 FROM json_each(${config}, '$.userGroups') g WHERE g.value IN (SELECT value FROM json_each(${JSON.stringify(ctx.scope.groups)}))))
    OR ifnull(json_extract(${config}, '$.expiresAt') <= ${ctx.clock.now().toISOString()}, 0)))`
}
