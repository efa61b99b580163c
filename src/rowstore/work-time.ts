import { type SQL, sql } from 'drizzle-orm'
import { appendEventsFrom } from './events.ts'
import type { RowWrite } from './membership.ts'
import { capturedIds, workChangeStatements, workStateJson } from './work-sql.ts'
import { doneStatusesSql } from './workflow.ts'

/**
 * What time does to work state (docs/worklist.md "Time rules"), as statements of the row store's
 * write protocol (write.ts): a row's first entry into its panel (`entered_at`, and the SLA's
 * `dueAt`), and the scheduler step's moves — expired claims freed, due dates passed, snoozes
 * ended. Every statement is conditional on the state it reads in its own transaction, so two
 * instances running the same step never both act.
 */

/** Scratch rows of the time step (`pending_changes`): identities whose dueAt passed, and whose snooze ended. */
const OVERDUE = -2
const WOKEN = -3

/** Who acts for the rules of time: the service itself. */
const SYSTEM = 'system'

const metadata = (cause: string) => JSON.stringify({ source: 'system', cause })

/**
 * The identities a write with events brought into the panel for the first time: those it lists as
 * inserted (view 0 of its token) that never entered before. Statements that go after the write's
 * rows and before its membership step's *after*: `entered_at` = the write's time; with an SLA
 * (`slaMs`), the ones without a `dueAt` also get `dueAt = entered_at + SLA` as a work change of
 * cause `sla` (version + 1, `row.work_updated`, change record, records' work copy), which the
 * views' membership step then sees. A panel without an SLA pays one UPDATE; a first sync of any
 * size a fixed number of statements, none per row.
 */
export function enteredStatements(write: RowWrite, slaMs: number | null): SQL[] {
  const firstEntered = sql`SELECT e.id FROM pending_changes p
    JOIN row_identities e ON e.data_source_id = p.data_source_id AND e.key = p.key
    WHERE p.token = ${write.token} AND p.view_id = 0 AND p.kind = 'inserted' AND e.entered_at IS NULL`
  const entered = sql`UPDATE row_identities SET entered_at = ${write.at} WHERE id IN (${firstEntered})`
  if (slaMs === null) return [entered]
  const dueAt = new Date(Date.parse(write.at) + slaMs).toISOString()
  const sla = workChangeStatements({
    token: write.token,
    tenantId: write.tenantId,
    panelId: write.panelId,
    pick: sql`${firstEntered} AND e.due_at IS NULL`,
    set: sql`due_at = ${dueAt}, entered_at = ${write.at}`,
    at: write.at,
    by: SYSTEM,
    cause: 'sla',
    metadata: metadata('sla'),
  })
  return [...sla.capture, ...sla.listed, ...sla.apply, entered]
}

/**
 * The scheduler step's moves of one panel at `write.at`, for write.ts `changeWork` (its membership
 * loaded at the same time, so the views see `_overdue`, `_snoozed` and `_assignee` as of then):
 *
 * - claims whose lease ran out (`claim_expires_at <= at`) are freed: a work change of cause
 *   `lease_expired` (version + 1, `row.work_updated`, change record);
 * - identities whose `due_at` passed (`due_at < at`, as `_overdue` reads it), not done, present
 *   in the panel, whose `row.overdue` was not appended for that `due_at` yet: one `row.overdue`
 *   each, and `overdue_for = due_at`, so no later step (of this instance or another) appends it
 *   again;
 * - identities whose snooze ended (`snoozed_until <= at`) and was not applied yet: `woken_for =
 *   snoozed_until`.
 *
 * The last two are no work changes (no version, no `row.work_updated`); all three are listed for
 * the views' membership step. `read` answers how many of each.
 */
export function timeStatements(write: RowWrite): { capture: SQL[]; apply: SQL[]; read: SQL } {
  const { token, tenantId, panelId, at } = write
  // Unary `+`: the panel narrows what the partial index of each time column finds, rather than the
  // planner scanning the panel's every identity through its tenant/panel index.
  const inPanel = (t: string) => sql`+${sql.raw(t)}.tenant_id = ${tenantId} AND +${sql.raw(t)}.panel_id = ${panelId}`
  const lease = workChangeStatements({
    token,
    tenantId,
    panelId,
    pick: sql`SELECT id FROM row_identities WHERE claim_expires_at <= ${at} AND ${inPanel('row_identities')}`,
    set: sql`assignee = NULL, claimed_at = NULL, claim_expires_at = NULL`,
    at,
    by: SYSTEM,
    cause: 'lease_expired',
    metadata: metadata('lease_expired'),
  })
  const scratch = (view: number) => sql`SELECT row_id FROM pending_changes WHERE token = ${token} AND view_id = ${view}`
  const capture = [
    ...lease.capture,
    ...lease.listed,
    sql`INSERT INTO pending_changes (token, view_id, data_source_id, key, kind, row_id)
      SELECT ${token}, ${OVERDUE}, i.data_source_id, i.key, 'overdue', i.id FROM row_identities i
      WHERE ${overdueCondition(at)} AND ${inPanel('i')}`,
    sql`INSERT INTO pending_changes (token, view_id, data_source_id, key, kind, row_id)
      SELECT ${token}, ${WOKEN}, i.data_source_id, i.key, 'woken', i.id FROM row_identities i
      WHERE ${wokenCondition(at)} AND ${inPanel('i')}`,
    sql`INSERT OR IGNORE INTO pending_changes (token, view_id, data_source_id, key, kind)
      SELECT ${token}, 0, data_source_id, key, 'time' FROM pending_changes WHERE token = ${token} AND view_id IN (${OVERDUE}, ${WOKEN})`,
  ]
  const apply = [
    ...lease.apply,
    // After the leases: the event carries the state as this step leaves it.
    ...appendEventsFrom(
      tenantId,
      sql`SELECT i.id AS ord, 'row.overdue' AS type, ${panelId} AS panel_id, NULL AS view_id, i.data_source_id AS data_source_id,
          json_object('rowId', i.id, 'key', i.key, 'panelId', i.panel_id, 'dueAt', i.due_at, 'work', json(${workStateJson('i')})) AS data
        FROM pending_changes p JOIN row_identities i ON i.id = p.row_id WHERE p.token = ${token} AND p.view_id = ${OVERDUE}`,
      at,
    ),
    sql`UPDATE row_identities SET overdue_for = due_at WHERE id IN (${scratch(OVERDUE)})`,
    sql`UPDATE row_identities SET woken_for = snoozed_until WHERE id IN (${scratch(WOKEN)})`,
  ]
  const count = (rows: SQL) => sql`(SELECT count(*) FROM (${rows}))`
  const read = sql`SELECT ${count(capturedIds(token))} AS freed, ${count(scratch(OVERDUE))} AS overdue, ${count(scratch(WOKEN))} AS woken`
  return { capture, apply, read }
}

/**
 * The panels of every tenant with something for the time step at `at` (one of the three kinds
 * above), each kind found through its partial index on row_identities; deleted panels are left.
 */
export function panelsWithTimeDue(at: string): SQL {
  const live = sql`EXISTS (SELECT 1 FROM panels p WHERE p.id = i.panel_id AND p.deleted_at IS NULL)`
  // No ORDER BY: asking the union for an order lets the planner scan the table in its tenant/panel
  // index instead of searching the three partial ones.
  return sql`SELECT DISTINCT tenant_id, panel_id FROM (
      SELECT tenant_id, panel_id FROM row_identities i WHERE i.claim_expires_at <= ${at} AND ${live}
      UNION ALL SELECT tenant_id, panel_id FROM row_identities i WHERE ${overdueCondition(at)} AND ${live}
      UNION ALL SELECT tenant_id, panel_id FROM row_identities i WHERE ${wokenCondition(at)} AND ${live})`
}

/**
 * One row, `owed`: 1 when the time step owes the panel something at `at` (a claim to free, a due
 * date passed, a snooze ended), so that views reading those columns are behind until it runs.
 * Each kind is found through its partial index, as the step finds them.
 */
export function timeOwedSql(tenantId: string, panelId: number, at: string): SQL {
  const inPanel = sql`+i.tenant_id = ${tenantId} AND +i.panel_id = ${panelId}`
  return sql`SELECT (EXISTS (SELECT 1 FROM row_identities i WHERE i.claim_expires_at <= ${at} AND ${inPanel})
    OR EXISTS (SELECT 1 FROM row_identities i WHERE ${overdueCondition(at)} AND ${inPanel})
    OR EXISTS (SELECT 1 FROM row_identities i WHERE ${wokenCondition(at)} AND ${inPanel})) AS owed`
}

// --- Internal helpers ---

/**
 * The identity `i` became overdue and its `row.overdue` is still owed: `due_at` passed (strictly,
 * as `_overdue` reads it), the status is not done, the row is in its panel (a record in its
 * source's visible generation), and `overdue_for` is not that `due_at`.
 */
const overdueCondition = (at: string) => sql`i.due_at < ${at} AND i.overdue_for IS NOT i.due_at
  AND i.status NOT IN (${doneStatusesSql(sql`i.panel_id`)})
  AND EXISTS (SELECT 1 FROM records r WHERE r.data_source_id = i.data_source_id AND r.key = i.key
    AND r.generation = (SELECT current_generation FROM data_sources WHERE id = i.data_source_id))`

/** The snooze of identity `i` ended (`_snoozed` is false from `snoozed_until` on) and no step applied it yet. */
const wokenCondition = (at: string) => sql`i.snoozed_until <= ${at} AND i.woken_for IS NOT i.snoozed_until`
