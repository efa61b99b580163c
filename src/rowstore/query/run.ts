import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import type { ColumnRef } from '../../engine/filters/resolve.ts'
import {
  type AggregateSpec,
  type CellSource,
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
import { type RecordRow, type Row, recordColumns, toRow } from './row-shape.ts'
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
  /** Where the page came from: the view's stored members, or the row query over the panel. */
  path: 'members' | 'query'
  /** Where its groups and aggregations came from, when it has any. */
  summaryPath?: 'members' | 'query'
}

/** A page already read from a view's stored members (rowstore/member-page.ts): its records and total. */
export interface StoredPage {
  records: RecordRow[]
  total: number
  /** Where the view's groups and aggregations are read from its members (member-summary.ts), when they keep them. */
  summary?: { scope: SQL; cells: CellSource; holds: (c: ColumnRef) => boolean }
}

/**
 * The page at `offset` (`limit` rows in the query's order) with the total and the view's
 * groups/aggregations. With `stored`, the page and total are those; the groups and aggregations
 * come from the members too when they keep every column the view groups and aggregates by, else
 * from the query. Either way they are cached per state of the panel.
 */
export async function queryRowsPage(
  ctx: ServiceContext,
  q: PreparedRows,
  offset: number,
  limit: number,
  stored?: StoredPage,
): Promise<RowsPage> {
  const medians = q.aggregations.filter((a) => a.fn === 'median')
  const aggregated = q.aggregations.length > 0
  if (stored && !aggregated && q.groupBy.length === 0) {
    return { rows: stored.records.map((r) => toRow(r, q.visible)), total: stored.total, path: 'members' }
  }
  const members = stored?.summary
  const fromMembers = members && [...q.groupBy, ...q.aggregations.map((a) => a.column)].every(members.holds)
  const scope = fromMembers ? members.scope : q.scope
  const cells = fromMembers ? members.cells : undefined
  const summary: SQL[] = [sql`SELECT count(*) AS n ${scope}`]
  if (aggregated) summary.push(overallSql(scope, q.aggregations, cells), ...medians.map((m) => medianSql(scope, [], m, cells)))
  if (q.groupBy.length > 0) {
    summary.push(groupsSql(scope, q.groupBy, q.aggregations, cells), ...medians.map((m) => medianSql(scope, q.groupBy, m, cells)))
  }
  const key = await summaryKey(ctx, q.panelId, summary)
  const cached = await ctx.cache.get<Record<string, unknown>[][]>(ctx.scope.tenantId, key)
  const statements = [...(stored ? [] : [pageSql(q, offset, limit)]), ...(cached ? [] : summary)]
  const read = statements.length > 0 ? await readAll(ctx, statements) : []
  const records = stored ? stored.records : (read.shift() as unknown as RecordRow[])
  const computed = cached ?? read
  if (!cached) await ctx.cache.set(ctx.scope.tenantId, key, computed)
  // The summary's results as the code below numbers them: the count, a slot where the page was, the rest.
  const results = [computed[0], [], ...computed.slice(1)]
  const [[count]] = results
  const page: RowsPage = {
    rows: records.map((r) => toRow(r, q.visible)),
    total: stored ? stored.total : Number(count?.n ?? 0),
    path: stored ? 'members' : 'query',
  }
  if (aggregated || q.groupBy.length > 0) page.summaryPath = fromMembers ? 'members' : 'query'
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
   * Record ids read ahead per keyset step of a sorted query (default 50 batches): the rows in scope
   * are sorted once per step, so fewer, longer steps cost less; a step holds only ids.
   */
  windowSize?: number
  /** Stop after this many rows. */
  maxRows?: number
}

/**
 * Every row of a prepared query, in the query's order (the order the rows endpoints page in), in
 * batches, never with OFFSET, so a long export never re-reads what it has passed and holds one
 * batch at a time. A query without sort terms walks lasting row ids (`r.row_id > ?`); a sorted one walks
 * keyset steps over its sort terms plus the row id (order.ts `afterSql`): each step reads the next
 * `windowSize` ids, then the rows of those ids batch by batch.
 */
export async function* rowBatches(ctx: ServiceContext, q: PreparedRows, options: RowBatchOptions = {}): AsyncGenerator<Row[]> {
  const size = Math.max(1, Math.min(options.batchSize ?? 1000, 10_000))
  const window = Math.max(size, Math.min(options.windowSize ?? size * 50, 200_000))
  const maxRows = options.maxRows ?? Number.POSITIVE_INFINITY
  if (q.terms.length === 0) yield* idBatches(ctx, q, size, maxRows)
  else yield* sortedBatches(ctx, q, size, window, maxRows)
}

// --- Internal helpers ---

/**
 * Batches in lasting-row-id order (the order of a query without sort terms), walking the row-id
 * index: each batch starts after the last row id of the one before.
 */
async function* idBatches(ctx: ServiceContext, q: PreparedRows, size: number, maxRows: number): AsyncGenerator<Row[]> {
  let left = maxRows
  let after = 0
  while (left > 0) {
    const n = Math.min(size, left)
    const records = await ctx.db.all<RecordRow>(
      sql`SELECT ${sql.raw(recordColumns('r'))} ${q.idScope} AND r.row_id > ${after} ORDER BY r.row_id LIMIT ${n}`,
    )
    if (records.length === 0) return
    yield records.map((r) => toRow(r, q.visible))
    left -= records.length
    after = Number(records[records.length - 1].row_id)
    if (records.length < n) return
  }
}

/**
 * Batches in the order of the query's sort terms, then id. Each keyset step sorts the rows in
 * scope once and keeps the next `window` ids (one more tells whether there are more); their rows
 * are then read `size` at a time, in that order. The next step starts after the step's last row:
 * its term values, read with the step's final batch and bound as the one-row table `last`.
 */
async function* sortedBatches(
  ctx: ServiceContext,
  q: PreparedRows,
  size: number,
  window: number,
  maxRows: number,
): AsyncGenerator<Row[]> {
  const keys = q.terms.map((_, i) => `k${i}`)
  // For the steps after the first: the terms computed once per row as columns of `w`, which the
  // keyset condition and the sort name (so every parameter of a term is bound once).
  const values = sql.join(
    q.terms.map((t, i) => sql`${t.value} AS ${sql.raw(keys[i])}`),
    sql`, `,
  )
  const named = q.terms.map((t, i) => ({ ...t, value: sql.raw(`w.${keys[i]}`) }))
  let left = maxRows
  let last: unknown[] | undefined
  while (left > 0) {
    const n = Math.min(window, left)
    const step = last
      ? sql`WITH last (${sql.raw([...keys, 'id'].join(', '))}) AS (VALUES (${sql.join(
          last.map((v) => sql`${v}`),
          sql`, `,
        )}))
        SELECT w.id FROM (SELECT r.id AS id, r.row_id AS row_id, ${values} ${q.scope}) w WHERE ${afterSql(named, 'w.row_id', 'last')}
        ORDER BY ${orderByTerms(named, 'w.row_id')} LIMIT ${n + 1}`
      : sql`SELECT r.id AS id ${q.scope} ORDER BY ${q.order} LIMIT ${n + 1}`
    const found = await ctx.db.all<{ id: number | bigint }>(step)
    const ids = found.slice(0, n).map((r) => Number(r.id))
    const more = found.length > n
    let end: Record<string, unknown> | undefined
    for (let i = 0; i < ids.length; i += size) {
      const final = more && i + size >= ids.length
      // The step's final batch also reads each row's term values: the next step starts after its last row.
      const records = await ctx.db.all<RecordRow & Record<string, unknown>>(sql`SELECT ${sql.raw(recordColumns('r'))}
        ${final ? sql`, ${values}` : sql``}
        FROM json_each(${JSON.stringify(ids.slice(i, i + size))}) j JOIN records r ON r.id = j.value ORDER BY j.key`)
      if (final) end = records[records.length - 1]
      if (records.length > 0) yield records.map((r) => toRow(r, q.visible))
    }
    left -= ids.length
    if (!more || left <= 0) return
    // Every row of the final batch went meanwhile (a sync replaced the generation): stop loudly rather than skip rows.
    if (!end) throw new Error('the rows changed while they were read in order; export again')
    last = [...keys.map((k) => end[k]), end.row_id]
  }
}

/**
 * The page: record ids sorted and cut from the row index alone, then only those records read, in
 * that order (numbered as they come out of the ordered, limited subquery).
 */
const pageSql = (q: PreparedRows, offset: number, limit: number): SQL => sql`
  SELECT ${sql.raw(recordColumns('x'))}
  FROM (SELECT id, row_number() OVER () AS n FROM (SELECT r.id AS id ${q.scope} ORDER BY ${q.order} LIMIT ${limit} OFFSET ${offset})) p
  JOIN records x ON x.id = p.id ORDER BY p.n`

/** The rows of each statement, read in one batch (one state of the database). */
async function readAll(ctx: ServiceContext, statements: SQL[]): Promise<Record<string, unknown>[][]> {
  const [first, ...rest] = statements.map((s) => ctx.db.all<Record<string, unknown>>(s))
  return (await ctx.db.batch([first, ...rest])) as Record<string, unknown>[][]
}

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
