import { type SQL, sql } from 'drizzle-orm'
import type { EventType } from '../db/schema-live.ts'

/**
 * Appending to the change feed (LIVE.md; docs/live.md). Every function answers statements for the
 * caller's batch, so events commit in the same transaction as the change that causes them. Each
 * append takes its `seq` numbers from `event_sequences` inside that transaction and moves it on,
 * so a tenant's events number 1, 2, 3, … in commit order, and a pruned log never reuses a number.
 */

/** Every event type of the change feed (LIVE.md "Events"), in the order the docs list them. */
export const EVENT_TYPES = [
  'row.entered',
  'row.left',
  'row.updated',
  'row.work_updated',
  'row.commented',
  'row.overdue',
  'panel.rows_changed',
  'sync.completed',
  'sync.failed',
  'view.updated',
  'view.published',
  'view.deleted',
] as const satisfies readonly EventType[]

// Both ways: a type added to the schema must be added here too.
type Missing = Exclude<EventType, (typeof EVENT_TYPES)[number]>
const _allListed: Missing extends never ? true : never = true

export interface NewEvent {
  type: EventType
  panelId?: number | null
  viewId?: number | null
  dataSourceId?: number | null
  data: unknown
}

/** Events known to the caller, appended in the given order (only when `when` holds, if given). */
export function appendEvents(tenantId: string, list: readonly NewEvent[], occurredAt: string, when?: SQL): SQL[] {
  if (list.length === 0) return []
  const payload = JSON.stringify(
    list.map((e) => [e.type, e.panelId ?? null, e.viewId ?? null, e.dataSourceId ?? null, JSON.stringify(e.data ?? {})]),
  )
  return appendEventsFrom(
    tenantId,
    sql`SELECT j.key AS ord, j.value ->> 0 AS type, j.value ->> 1 AS panel_id, j.value ->> 2 AS view_id,
          j.value ->> 3 AS data_source_id, j.value ->> 4 AS data
        FROM json_each(${payload}) j WHERE ${when ?? sql`1`}`,
    occurredAt,
  )
}

/**
 * Events selected by SQL in the same transaction (membership moves): `select` yields the columns
 * `ord, type, panel_id, view_id, data_source_id, data` (data as JSON text); events are numbered in
 * `ord` order.
 */
export function appendEventsFrom(tenantId: string, select: SQL, occurredAt: string): SQL[] {
  return [
    sql`INSERT INTO events (tenant_id, seq, type, occurred_at, panel_id, view_id, data_source_id, data)
      SELECT ${tenantId}, b.base + row_number() OVER (ORDER BY e.ord), e.type, ${occurredAt}, e.panel_id, e.view_id,
        e.data_source_id, e.data
      FROM (${select}) e,
        (SELECT coalesce((SELECT last_seq FROM event_sequences WHERE tenant_id = ${tenantId}), 0) AS base) b
      ORDER BY e.ord`,
    // The newest seq through the (tenant, seq) index: one index step, not a scan of the tenant's log.
    sql`INSERT INTO event_sequences (tenant_id, last_seq)
      SELECT ${tenantId}, m FROM (SELECT (SELECT seq FROM events INDEXED BY events_tenant_seq_idx WHERE tenant_id = ${tenantId}
        ORDER BY seq DESC LIMIT 1) AS m) WHERE m IS NOT NULL
      ON CONFLICT (tenant_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)`,
  ]
}
