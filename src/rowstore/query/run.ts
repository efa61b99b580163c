import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import {
  type AggregateSpec,
  decodeAggregate,
  decodeKey,
  type GroupRow,
  groupIdentity,
  groupsSql,
  medianSql,
  overallSql,
} from './aggregate.ts'
import type { PreparedRows } from './prepare.ts'
import { type RecordRow, type Row, toRow } from './row-shape.ts'
import { summaryKey } from './summary.ts'

/**
 * Runs prepared row queries: one page with its total (and groups and aggregations when the view
 * asks), read in one batch so they describe the same state; and every matching row in id-keyset
 * batches for exports.
 */

export interface RowsPage {
  rows: Row[]
  total: number
  groups?: GroupRow[]
  aggregations?: Record<string, unknown>
}

/** The page at `offset` (`limit` rows in the query's order) with the total and the view's groups/aggregations. */
export async function queryRowsPage(ctx: ServiceContext, q: PreparedRows, offset: number, limit: number): Promise<RowsPage> {
  const medians = q.aggregations.filter((a) => a.fn === 'median')
  const summary: SQL[] = [sql`SELECT count(*) AS n ${q.scope}`]
  const aggregated = q.aggregations.length > 0
  if (aggregated) summary.push(overallSql(q.scope, q.aggregations), ...medians.map((m) => medianSql(q.scope, [], m)))
  if (q.groupBy.length > 0) {
    summary.push(groupsSql(q.scope, q.groupBy, q.aggregations), ...medians.map((m) => medianSql(q.scope, q.groupBy, m)))
  }
  const key = await summaryKey(ctx, q.panelId, summary)
  const cached = await ctx.cache.get<Record<string, unknown>[][]>(ctx.scope.tenantId, key)
  const statements = cached ? [pageSql(q, offset, limit)] : [pageSql(q, offset, limit), ...summary]
  const [first, ...rest] = statements.map((s) => ctx.db.all<Record<string, unknown>>(s))
  const [records, ...computed] = (await ctx.db.batch([first, ...rest])) as Record<string, unknown>[][]
  if (!cached) await ctx.cache.set(ctx.scope.tenantId, key, computed)
  const results = [(cached ?? computed)[0], records, ...(cached ?? computed).slice(1)]
  const [[count]] = results
  const page: RowsPage = {
    rows: (records as unknown as RecordRow[]).map((r) => toRow(r, q.visible)),
    total: Number(count?.n ?? 0),
  }
  let at = 2
  if (aggregated) {
    const overall = results[at++][0] ?? {}
    const medianRows = medians.map(() => results[at++])
    page.aggregations = aggregationValues(q.aggregations, overall, (m) => medianRows[medians.indexOf(m)][0]?.m)
  }
  if (q.groupBy.length > 0) {
    const groupRows = results[at++]
    const medianMaps = medians.map(() => medianMap(results[at++], q.groupBy.length))
    page.groups = groupRows.map((g) => {
      const values = q.groupBy.map((c, i) => decodeKey(c, g[`g${i}`]))
      const identity = groupIdentity(q.groupBy.map((_, i) => g[`g${i}`]))
      return {
        key: Object.fromEntries(q.groupBy.map((c, i) => [c.name, values[i]])),
        count: Number(g.n),
        aggregations: aggregationValues(q.aggregations, g, (m) => medianMaps[medians.indexOf(m)].get(identity)),
      }
    })
  }
  return page
}

export interface RowBatchOptions {
  /** Rows per batch (default 1000). */
  batchSize?: number
  /** Stop after this many rows. */
  maxRows?: number
}

/**
 * Every row of a prepared query in batches by ascending record id (keyset, no OFFSET), so a long
 * export never re-reads what it has passed. Each batch is one short read.
 */
export async function* rowBatches(ctx: ServiceContext, q: PreparedRows, options: RowBatchOptions = {}): AsyncGenerator<Row[]> {
  const size = Math.max(1, Math.min(options.batchSize ?? 1000, 10_000))
  let left = options.maxRows ?? Number.POSITIVE_INFINITY
  let after = 0
  while (left > 0) {
    const n = Math.min(size, left)
    const records = await ctx.db.all<RecordRow>(
      sql`SELECT r.id, r.data_source_id, r.cells, r.errors ${q.idScope} AND r.id > ${after} ORDER BY r.id LIMIT ${n}`,
    )
    if (records.length === 0) return
    yield records.map((r) => toRow(r, q.visible))
    left -= records.length
    after = Number(records[records.length - 1].id)
    if (records.length < n) return
  }
}

// --- Internal helpers ---

/**
 * The page: record ids sorted and cut from the row index alone, then only those records read, in
 * that order (numbered as they come out of the ordered, limited subquery).
 */
const pageSql = (q: PreparedRows, offset: number, limit: number): SQL => sql`
  SELECT x.id, x.data_source_id, x.cells, x.errors
  FROM (SELECT id, row_number() OVER () AS n FROM (SELECT r.id AS id ${q.scope} ORDER BY ${q.order} LIMIT ${limit} OFFSET ${offset})) p
  JOIN records x ON x.id = p.id ORDER BY p.n`

function aggregationValues(
  aggs: AggregateSpec[],
  row: Record<string, unknown>,
  median: (a: AggregateSpec) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  let i = 0
  for (const a of aggs) {
    out[a.key] = decodeAggregate(a, a.fn === 'median' ? median(a) : row[`a${i++}`])
  }
  return out
}

function medianMap(rows: Record<string, unknown>[], keys: number): Map<string, unknown> {
  const map = new Map<string, unknown>()
  for (const r of rows) {
    map.set(groupIdentity(Array.from({ length: keys }, (_, i) => r[`k${i}`])), r.m)
  }
  return map
}
