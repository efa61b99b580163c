import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import type { EventType } from '../../db/schema-live.ts'
import { AppError } from '../../errors.ts'
import type { Readable } from './events.access.ts'
import type { LoggedEvent } from './events.schemas.ts'

/**
 * Reads of the change feed's log (the `events` table; LIVE.md "Reading the log"). Every read walks
 * the unique index (tenant_id, seq) from a cursor. Plain SQL: the streams run these on every commit.
 */

const COLUMNS = sql.raw(
  'seq, type, occurred_at AS "occurredAt", panel_id AS "panelId", view_id AS "viewId", data_source_id AS "dataSourceId", data',
)

/** One event of a tenant's log by its seq (an outbound delivery's), if still retained. */
export async function readEvent(db: Db, tenantId: string, seq: number): Promise<LoggedEvent | undefined> {
  const [event] = await db.all<LoggedEvent>(sql`SELECT ${COLUMNS} FROM events WHERE tenant_id = ${tenantId} AND seq = ${seq}`)
  return event ? { ...event, seq: Number(event.seq) } : undefined
}

/** Where a tenant's log stands: the last seq given (kept past pruning) and the oldest retained. */
export interface LogPosition {
  head: number
  /** The oldest retained seq; `head + 1` when nothing is retained. */
  oldest: number
}

const positionSql = (tenantId: string) => sql`
  SELECT coalesce((SELECT last_seq FROM event_sequences WHERE tenant_id = ${tenantId}), 0) AS head,
         (SELECT min(seq) FROM events WHERE tenant_id = ${tenantId}) AS oldest`

function toPosition(row: { head: number; oldest: number | null } | undefined): LogPosition {
  const head = Number(row?.head ?? 0)
  return { head, oldest: row?.oldest == null ? head + 1 : Number(row.oldest) }
}

export async function logPosition(db: Db, tenantId: string): Promise<LogPosition> {
  const [row] = await db.all<{ head: number; oldest: number | null }>(positionSql(tenantId))
  return toPosition(row)
}

/**
 * 410 CURSOR_EXPIRED when events after `after` were pruned (`after < oldest - 1`): the client must
 * re-read the rows and resume from `details.oldestSeq - 1` (docs/live.md "Retention").
 */
export function checkCursor(after: number, position: LogPosition): void {
  if (after >= position.oldest - 1) return
  throw new AppError(
    'CURSOR_EXPIRED',
    `Events after ${after} are no longer retained; the oldest retained event is ${position.oldest}. Re-read the rows, then resume after ${position.oldest - 1}.`,
    { oldestSeq: position.oldest, after },
  )
}

/** The next `limit` events of the tenant after `after`, whoever may read them (the streams' shared read). */
export function readLog(db: Db, tenantId: string, after: number, limit: number): Promise<LoggedEvent[]> {
  return db.all<LoggedEvent>(sql`
    SELECT ${COLUMNS} FROM events WHERE tenant_id = ${tenantId} AND seq > ${after} ORDER BY seq LIMIT ${limit}`)
}

/** What one page of readable events is narrowed to, beside the caller's rights. */
export interface EventFilter {
  types?: EventType[]
  panelId?: number
  viewId?: number
}

/** `mayReadEvent` (events.access.ts) as SQL over the columns of `events`. */
function readableSql(r: Readable): SQL {
  if (r.all) return sql`1`
  const views = JSON.stringify([...r.views])
  const known = JSON.stringify([...r.known])
  const owned = JSON.stringify([...r.panels])
  return sql`(view_id IN (SELECT value FROM json_each(${views}))
    OR ((view_id IS NULL OR view_id NOT IN (SELECT value FROM json_each(${known})))
        AND panel_id IN (SELECT value FROM json_each(${owned}))))`
}

function filterSql(f: EventFilter): SQL[] {
  const out: SQL[] = []
  if (f.types?.length) out.push(sql`type IN (SELECT value FROM json_each(${JSON.stringify(f.types)}))`)
  if (f.panelId !== undefined) out.push(sql`panel_id = ${f.panelId}`)
  if (f.viewId !== undefined) out.push(sql`view_id = ${f.viewId}`)
  return out
}

/**
 * Up to `limit + 1` events after `after` the caller may read, and the log's position, in one batch
 * (one snapshot: the head is exactly what this read saw).
 */
export async function readReadable(
  db: Db,
  tenantId: string,
  after: number | undefined,
  limit: number,
  readable: Readable,
  filter: EventFilter,
): Promise<{ events: LoggedEvent[]; position: LogPosition }> {
  const conditions = [sql`tenant_id = ${tenantId}`, readableSql(readable), ...filterSql(filter)]
  // Without a cursor the page starts at the oldest retained event (one statement: same snapshot).
  const from = after ?? sql`coalesce((SELECT min(seq) FROM events WHERE tenant_id = ${tenantId}) - 1, 0)`
  const [rows, position] = await db.batch([
    db.all<LoggedEvent>(sql`
      SELECT ${COLUMNS} FROM events WHERE seq > ${from} AND ${sql.join(conditions, sql` AND `)}
      ORDER BY seq LIMIT ${limit + 1}`),
    db.all<{ head: number; oldest: number | null }>(positionSql(tenantId)),
  ])
  return { events: rows as LoggedEvent[], position: toPosition((position as { head: number; oldest: number | null }[])[0]) }
}

/** `readReadable`'s filter in memory (the streams' fan-out). */
export function matchesFilter(f: EventFilter, e: LoggedEvent): boolean {
  if (f.types?.length && !f.types.includes(e.type)) return false
  if (f.panelId !== undefined && e.panelId !== f.panelId) return false
  if (f.viewId !== undefined && e.viewId !== f.viewId) return false
  return true
}
