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
import { afterSql, orderByTerms } from './order.ts'
import type { PreparedRows } from './prepare.ts'
import { type RecordRow, type Row, toRow } from './row-shape.ts'
import { summaryKey } from './summary.ts'

/**
 * Runs prepared row queries: one page with its total (and groups and aggregations when the view
 * asks), read in one batch so they describe the same state; and every matching row in keyset
 * batches, in the same order, for exports.
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
  /**
   * Record ids read ahead per keyset step of a sorted query (default 20 batches): the rows in scope
   * are sorted once per step, so fewer, longer steps cost less; a step holds only ids and sort values.
   */
  windowSize?: number
  /** Stop after this many rows. */
  maxRows?: number
}

/**
 * Every row of a prepared query, in the query's order (the order the rows endpoints page in), in
 * batches, never with OFFSET, so a long export never re-reads what it has passed and holds one
 * batch at a time. A query without sort terms walks record ids (`r.id > ?`); a sorted one walks
 * keyset steps over its sort terms plus the id (order.ts `afterSql`): each step reads the next
 * `windowSize` ids with their sort values, then the rows of those ids batch by batch.
 */
export async function* rowBatches(ctx: ServiceContext, q: PreparedRows, options: RowBatchOptions = {}): AsyncGenerator<Row[]> {
  const size = Math.max(1, Math.min(options.batchSize ?? 1000, 10_000))
  const window = Math.max(size, Math.min(options.windowSize ?? size * 20, 100_000))
  const maxRows = options.maxRows ?? Number.POSITIVE_INFINITY
  if (q.terms.length === 0) yield* idBatches(ctx, q, size, maxRows)
  else yield* sortedBatches(ctx, q, size, window, maxRows)
}

// --- Internal helpers ---

/** Batches in record-id order, straight from the (tenant, panel) index. */
async function* idBatches(ctx: ServiceContext, q: PreparedRows, size: number, maxRows: number): AsyncGenerator<Row[]> {
  let left = maxRows
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

/**
 * Batches in the order of the query's sort terms, then id. Each keyset step sorts the rows in
 * scope after the last row of the previous step (its sort values and id, bound as the one-row
 * table `last`) and keeps the first `window` ids; their rows are then read `size` at a time.
 */
async function* sortedBatches(
  ctx: ServiceContext,
  q: PreparedRows,
  size: number,
  window: number,
  maxRows: number,
): AsyncGenerator<Row[]> {
  // The terms computed once per row, as columns k0, k1, … of `w`; the keyset and the sort name those.
  const values = sql.join(
    q.terms.map((t, i) => sql`${t.value} AS ${sql.raw(`k${i}`)}`),
    sql`, `,
  )
  const named = q.terms.map((t, i) => ({ ...t, value: sql.raw(`w.k${i}`) }))
  const columns = sql.raw(['w.id', ...q.terms.map((_, i) => `w.k${i}`)].join(', '))
  const lastColumns = sql.raw([...q.terms.map((_, i) => `k${i}`), 'id'].join(', '))
  let left = maxRows
  let last: unknown[] | undefined
  while (left > 0) {
    const n = Math.min(window, left)
    const head = last
      ? sql`WITH last (${lastColumns}) AS (VALUES (${sql.join(
          last.map((v) => sql`${v}`),
          sql`, `,
        )})) `
      : sql``
    const step = await ctx.db.all<Record<string, unknown>>(sql`${head}SELECT ${columns}
      FROM (SELECT r.id AS id, ${values} ${q.scope}) w
      ${last ? sql`WHERE ${afterSql(named, 'w.id', 'last')}` : sql``}
      ORDER BY ${orderByTerms(named, 'w.id')} LIMIT ${n}`)
    for (let i = 0; i < step.length; i += size) {
      const ids = step.slice(i, i + size).map((r) => Number(r.id))
      const records = await ctx.db.all<RecordRow>(sql`SELECT x.id, x.data_source_id, x.cells, x.errors
        FROM json_each(${JSON.stringify(ids)}) j JOIN records x ON x.id = j.value ORDER BY j.key`)
      if (records.length > 0) yield records.map((r) => toRow(r, q.visible))
    }
    left -= step.length
    if (step.length < n) return
    const end = step[step.length - 1]
    last = [...q.terms.map((_, i) => end[`k${i}`]), end.id]
  }
}

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
