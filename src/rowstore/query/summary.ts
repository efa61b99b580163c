import { type SQL, sql } from 'drizzle-orm'
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core'
import type { ServiceContext } from '../../context.ts'
import { contentHashes } from '../records.ts'

/**
 * The summary of a row query — its total, groups and aggregations — cached per query and per data
 * version of the panel, so paging through a view counts its rows once. The version moves with every
 * change record of the panel (every sync, webhook delivery, import, column or panel change records
 * one) and with the panel's columns and materialised versions (a recompute finishing), so a summary
 * never outlives a write. Keys live under the tenant (the cache's own rule).
 */

/** Renders statements to text for the cache key only; never used to run anything. */
const dialect = new SQLiteSyncDialect()

/** The cache key of a query's summary at the panel's current data version. */
export async function summaryKey(ctx: ServiceContext, panelId: number, statements: SQL[]): Promise<string> {
  const [version] = await ctx.db.all<{ c: number | null; v: number; m: number }>(sql`
    SELECT (SELECT max(id) FROM changes WHERE tenant_id = ${ctx.scope.tenantId} AND panel_id = ${panelId}) AS c,
      columns_version AS v, materialised_version AS m
    FROM panels WHERE id = ${panelId} AND tenant_id = ${ctx.scope.tenantId}`)
  const text = JSON.stringify(statements.map((s) => dialect.sqlToQuery(s)))
  const [hash] = await contentHashes([text], ctx.sha256Hex)
  return `rows:summary:${panelId}:${version?.c ?? 0}.${version?.v ?? 0}.${version?.m ?? 0}:${hash}`
}
