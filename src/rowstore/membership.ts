import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import type { ColumnRef } from '../engine/filters/resolve.ts'
import { appendEventsFrom } from './events.ts'
import { loadPanelMembership, type MemberView, type PanelMembership, type ViewPatch } from './membership-plan.ts'
import { cellPath } from './query/filter-sql.ts'
import {
  type MemberOrder,
  memberKeyColumns,
  memberKeysDiffer,
  memberKeyValues,
  memberValueColumns,
  orderKeyColumns,
  valueNames,
} from './query/member-order.ts'
import { summaryNames, summaryValueColumns } from './query/member-summary.ts'
import { VIRTUAL_NAMES, virtualColumn, virtualSql } from './query/virtual.ts'
import { fillTemplate, makeTemplate, type StatementTemplate } from './statement-template.ts'

/**
 * View membership as data (LIVE.md; docs/live.md "Membership"). `view_members` holds, per view,
 * the rows it matched after the last write that touched them, by stable identity (source, record
 * key), with the row as the view showed it. A write lists the identities it changed as
 * `pending_changes` rows (view 0) in its own batch; the statements here then compare, for each
 * view, just those identities with the stored membership, write the `row.*` events and the view
 * owners' notices, move the membership on, and clear the scratch rows — all in that batch. A write
 * that changed nothing any view reads costs one empty join per view.
 *
 * A view whose row query changed (its filters, the panel's cohort rule, its columns) is evaluated
 * afresh instead: its membership is replaced without `row.*` events, and one `view.updated` says so.
 */

/** One write: the scratch token of its batch, who made it and why. */
export interface RowWrite {
  tenantId: string
  panelId: number
  /** The user who made the change: views of their own get no notice of it. */
  actorId: string
  cause: 'sync' | 'webhook' | 'import' | 'recompute' | 'delete' | 'work'
  /** Names the write for the notices' dedupe (`sync:12`): repeating it notifies nobody twice. */
  eventKey: string
  /** Scratch rows of this write carry it; unique per write. */
  token: string
  at: string
  /** The source written, when one source was. */
  dataSourceId?: number
}

/**
 * Statements of one write's membership step, around its data statements in the same batch. A
 * view never evaluated (created before the feed existed) is evaluated first, with the rows as they
 * were, so the write's own moves still count. A view whose row query or columns changed since its
 * last evaluation is evaluated afresh after the write instead (no `row.*` events for it, one
 * `view.updated`): a new column is a change of the view, not of every row. Every other view's
 * moves among the write's identities follow; then the `row.*` and `panel.rows_changed` events,
 * the notices and the new membership; last, the scratch rows go.
 */
export function membershipStatements(membership: PanelMembership, write: RowWrite): { before: SQL[]; after: SQL[] } {
  const template = movesTemplate(membership, write)
  if (template) return { before: [], after: fillTemplate(template, write) }
  return buildMembershipStatements(membership, write)
}

/** The values of a write that vary from batch to batch: the slots of its membership step's template. */
type WriteSlot = 'token' | 'at' | 'eventKey' | 'actorId'

/** Two sets of marker values (the times valid and distinct, in case any were read as times). */
const WRITE_MARKERS: [Record<WriteSlot, string>, Record<WriteSlot, string>] = [
  { token: '\u0001token-a', at: '2001-01-01T01:01:01.001Z', eventKey: '\u0001key-a', actorId: '\u0001actor-a' },
  { token: '\u0001token-b', at: '2002-02-02T02:02:02.002Z', eventKey: '\u0001key-b', actorId: '\u0001actor-b' },
]

/**
 * The templates of the membership steps made with one loaded membership, by what else they depend
 * on; `seen` for a step built once (a template is made at the second batch: a one-off write such as
 * a webhook delivery builds its step once, not twice over for a template it never fills).
 */
const movesTemplates = new WeakMap<PanelMembership, Map<string, StatementTemplate<WriteSlot> | 'seen' | null>>()

/**
 * The membership step of a write that only moves views (each evaluated under its current key), as
 * a template (statement-template.ts) made once per loaded membership and kind of write: the later
 * batches of a sync or a recompute fill it in instead of building it again. Views that read work
 * state or time (their SQL is made from the write's time) always build afresh.
 */
function movesTemplate(membership: PanelMembership, write: RowWrite): StatementTemplate<WriteSlot> | undefined {
  const { views } = membership
  if (views.some((v) => v.where && (v.storedKey !== v.key || v.readsWork || v.readsTime))) return undefined
  const key = JSON.stringify([
    write.tenantId,
    write.panelId,
    write.cause,
    write.dataSourceId ?? null,
    views.map((v) => [v.id, v.key, v.storedKey, v.where !== null]),
  ])
  let byKey = movesTemplates.get(membership)
  if (!byKey) {
    byKey = new Map()
    movesTemplates.set(membership, byKey)
  }
  const known = byKey.get(key)
  if (known === undefined) {
    if (byKey.size >= 20) byKey.clear()
    byKey.set(key, 'seen')
    return undefined
  }
  if (known !== 'seen') return known ?? undefined
  const template = makeTemplate((marks) => {
    const built = buildMembershipStatements(membership, { ...write, ...marks })
    if (built.before.length > 0) throw new Error('not a move')
    return built.after
  }, WRITE_MARKERS)
  byKey.set(key, template ?? null)
  return template
}

function buildMembershipStatements(membership: PanelMembership, write: RowWrite): { before: SQL[]; after: SQL[] } {
  const before: SQL[] = []
  const after: SQL[] = []
  const changed: SQL[] = []
  for (const view of membership.views) {
    if (!view.where) continue
    if (view.storedKey === null) before.push(...resetStatements(membership, view, write))
    if (view.storedKey === null || view.storedKey === view.key) after.push(...moveStatements(membership, view, write))
    else changed.push(...resetStatements(membership, view, write))
  }
  // Without a view to move, only the panel's event is left to write.
  if (membership.views.some((v) => v.where))
    after.push(...rowEventStatements(write), noticeStatement(write), ...memberUpdateStatements(write))
  // A change of work state changes no row's data: no `panel.rows_changed`.
  if (write.cause !== 'work') after.push(...panelEventStatements(write))
  after.push(...changed, sql`DELETE FROM pending_changes WHERE token = ${write.token}`)
  return { before, after }
}

/**
 * Statements that evaluate one view afresh (a new view, changed filters or columns): its
 * membership replaced without `row.*` events; `view.updated` when `announce` (not for a view the
 * caller announces itself), carrying the view as GET answers it (view-payload.ts).
 */
export function resetStatements(
  membership: PanelMembership,
  view: MemberView,
  write: Pick<RowWrite, 'at'>,
  announce = true,
): SQL[] {
  if (!view.where) {
    return [
      sql`DELETE FROM view_members WHERE view_id = ${view.id}`,
      sql`UPDATE views SET member_count = NULL WHERE id = ${view.id}`,
    ]
  }
  const unchanged = sql`EXISTS (SELECT 1 FROM views WHERE id = ${view.id} AND membership_key IS ${view.storedKey})`
  const order = view.orderAt(write.at) ?? NO_ORDER
  const statements = [
    sql`DELETE FROM view_members WHERE view_id = ${view.id} AND ${unchanged}`,
    // The sort values read once per row (t), then the order keys computed from them (k, member-order.ts).
    // k is sorted in the view's order (small rows: ids and keys), and the members are inserted as k
    // lists them, so their rows lie in the table as the view reads them: an export walks them page
    // after page (moves since the evaluation scatter a few). Only where rows lie depends on it.
    sql`WITH t AS MATERIALIZED (
        SELECT r.id, r.row_id AS rid ${memberValueColumns(order)} ${summaryValueColumns(view.summary)}
        FROM records r JOIN data_sources s ON s.id = r.data_source_id AND s.tenant_id = ${membership.tenantId}
        WHERE r.tenant_id = ${membership.tenantId} AND r.panel_id = ${sql.raw(String(membership.panelId))}
          AND r.generation = s.current_generation AND ${unchanged} AND ${view.whereAt(write.at)}),
      k AS MATERIALIZED (
        SELECT t.id, ${memberKeyValues(order.keys(valueNames('t')), summaryNames(view.summary, 't'))}
        FROM t ORDER BY ${sql.raw(orderKeyColumns((c) => `${c} COLLATE NOCASE`))}, t.rid)
      INSERT INTO view_members (view_id, data_source_id, key, tenant_id, panel_id, row_id, row, ${sql.raw(memberKeyColumns())})
      SELECT ${view.id}, r.data_source_id, r.key, r.tenant_id, r.panel_id, r.row_id, ${rowJson(view, write.at)},
        ${sql.raw(memberKeyColumns((c) => `k.${c}`))}
      FROM k JOIN records r ON r.id = k.id`,
    // The total a page answers, counted once here and kept by every move after (memberUpdateStatements).
    sql`UPDATE views SET member_count = (SELECT count(*) FROM view_members WHERE view_id = ${view.id})
      WHERE id = ${view.id} AND membership_key IS ${view.storedKey}`,
  ]
  if (announce) {
    statements.push(
      ...appendEventsFrom(
        membership.tenantId,
        sql`SELECT 0 AS ord, 'view.updated' AS type, ${membership.panelId} AS panel_id, ${view.id} AS view_id,
            NULL AS data_source_id, ${JSON.stringify({ view: membership.payloads.get(view.id), membership: 'evaluated' })} AS data
          FROM views v WHERE v.id = ${view.id} AND ${unchanged}`,
        write.at,
      ),
    )
  }
  statements.push(
    sql`UPDATE views SET membership_key = ${view.key} WHERE id = ${view.id} AND membership_key IS ${view.storedKey}`,
  )
  return statements
}

/**
 * A view's first evaluation, or its re-evaluation when its row query changes (`patched`: as it is
 * about to be saved, for the statements to go into the same batch): its membership replaced
 * silently. Nothing when the stored membership already answers the query. `announce` adds the
 * `view.updated` of a re-evaluation for callers that append no view event of their own.
 */
export async function viewEvaluationStatements(
  db: Db,
  view: { tenantId: string; panelId: number; id: number },
  at: string,
  options: { patched?: ViewPatch; announce?: boolean } = {},
): Promise<SQL[]> {
  const membership = await loadPanelMembership(db, view.tenantId, view.panelId, { patched: options.patched, at })
  const compiled = membership.views.find((v) => v.id === view.id)
  if (!compiled || compiled.key === compiled.storedKey) return []
  return resetStatements(membership, compiled, { at }, options.announce ?? false)
}

/** Every view of a panel evaluated afresh where its query changed (a new cohort rule), each with its `view.updated`. */
export async function panelEvaluationStatements(db: Db, tenantId: string, panelId: number, at: string): Promise<SQL[]> {
  const membership = await loadPanelMembership(db, tenantId, panelId, { at })
  return membership.views.flatMap((v) => (v.key === v.storedKey ? [] : resetStatements(membership, v, { at })))
}

/** The keys of a view whose order does not fit in a member's keys (its pages sort: member-page.ts). */
const NO_ORDER: MemberOrder = { values: [], keys: () => [] }

/** A fresh scratch token: a write's own, so two concurrent writes never read each other's rows. */
export const writeToken = () => crypto.randomUUID()

// --- Internal helpers ---

/**
 * The row of `r` as `GET /api/views/{id}/rows` shows it: `_id`, `_key`, `_source`, `_errors` when
 * there are any, then each column's cell (null when absent). One `json_object` with the names as
 * literals (hex, so any name is safe in the SQL text) and each value read straight from the cells;
 * a view wider than a `json_object` call takes is built from the shape instead (`shapedRowJson`).
 */
function rowJson(view: Pick<MemberView, 'shape' | 'clock'>, now: string): SQL {
  const shape = JSON.parse(view.shape) as [string, string | number][]
  if (shape.length > MAX_OBJECT_PAIRS) return shapedRowJson(view, now)
  const value = (id: string | number): SQL => {
    if (typeof id === 'number') return sql.raw(`r.cells -> ${cellPath(id)}`)
    return Object.hasOwn(STORED_FIELDS, id) ? sql.raw(STORED_FIELDS[id]) : virtualJson(id, view, now)
  }
  const object = (errors: boolean) =>
    sql`json_object(${sql.join(
      shape.filter(([, id]) => errors || id !== '_errors').map(([name, id]) => sql`${textLiteral(name)}, ${value(id)}`),
      sql`, `,
    )})`
  return sql`(CASE WHEN r.errors IS NULL THEN ${object(false)} ELSE ${object(true)} END)`
}

/** The row's own fields a shape may name, as SQL over `r`. */
const STORED_FIELDS: Record<string, string> = {
  _id: 'r.row_id',
  _key: 'r.key',
  _source: 'r.data_source_id',
  _errors: 'json(r.errors)',
}

/** Name/value pairs a `json_object` call is given at most (SQLite's default limit is 127 arguments). */
const MAX_OBJECT_PAIRS = 60

/** The row as `rowJson` builds it, from the shape in SQL (so a view of any width stays one expression). */
function shapedRowJson(view: Pick<MemberView, 'shape' | 'clock'>, now: string): SQL {
  const shown = (JSON.parse(view.shape) as [string, string | number][]).map(([, id]) => id)
  const virtual = VIRTUAL_NAMES.filter((name) => shown.includes(name)).map(
    (name) => sql`WHEN ${name} THEN ${virtualJson(name, view, now)}`,
  )
  return sql`(SELECT json_group_object(c.value ->> 0, CASE c.value ->> 1 WHEN '_id' THEN r.row_id WHEN '_key' THEN r.key
      WHEN '_source' THEN r.data_source_id WHEN '_errors' THEN json(r.errors) ${sql.join(virtual, sql` `)}
      ELSE r.cells -> ('$."' || (c.value ->> 1) || '"') END)
    FROM json_each(${view.shape}) c WHERE c.value ->> 1 <> '_errors' OR r.errors IS NOT NULL)`
}

/** A virtual column the view shows (docs/worklist.md), as GET answers it (booleans as JSON), at the write's time. */
function virtualJson(name: string, view: Pick<MemberView, 'clock'>, now: string): SQL {
  const column = virtualColumn(name, { ...view.clock, now }) as ColumnRef
  const value = virtualSql(column)
  return column.kind === 'boolean' ? sql`json(CASE WHEN ${value} THEN 'true' ELSE 'false' END)` : value
}

/** A text as an SQL literal that cannot break out of itself: its UTF-8 bytes in hex, cast to text. */
function textLiteral(text: string): SQL {
  const hex = Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, '0')).join('')
  return sql.raw(`CAST(X'${hex}' AS TEXT)`)
}

/** The record of an identity in its source's current generation, in the view's panel. */
const currentRecord = (alias: string) =>
  sql.raw(`r.data_source_id = ${alias}.data_source_id AND r.key = ${alias}.key
    AND r.generation = (SELECT current_generation FROM data_sources WHERE id = ${alias}.data_source_id)`)

/** The view's moves among the write's identities: entered, updated (shown values differ), moved (new row id only), left. */
function moveStatements(membership: PanelMembership, view: MemberView, write: RowWrite): SQL[] {
  const unchanged = sql`EXISTS (SELECT 1 FROM views WHERE id = ${view.id} AND membership_key IS ${view.key})`
  const panel = sql.raw(String(membership.panelId))
  const where = view.whereAt(write.at)
  const order = view.orderAt(write.at) ?? NO_ORDER
  // The write's identities in this view's panel that it matches, each with its row as the view
  // shows it (`row`) and its member, if any (`m`).
  const matched = sql`${rowJson(view, write.at)} AS row, m.row AS member_row, m.row_id AS member_id
      FROM pending_changes c
      JOIN records r ON ${currentRecord('c')}
      LEFT JOIN view_members m ON m.view_id = ${view.id} AND m.data_source_id = r.data_source_id AND m.key = r.key
      WHERE c.token = ${write.token} AND c.view_id = 0 AND r.panel_id = ${panel} AND ${unchanged} AND ${where}`
  const pending = sql`INSERT OR IGNORE INTO pending_changes (token, view_id, data_source_id, key, kind, row_id, row, ${sql.raw(memberKeyColumns())})
      SELECT ${write.token}, ${view.id}, y.data_source_id, y.key, y.kind, y.id, y.row,`
  const left = sql`INSERT OR IGNORE INTO pending_changes (token, view_id, data_source_id, key, kind, row_id, row)
      SELECT ${write.token}, ${view.id}, m.data_source_id, m.key, 'left', m.row_id, m.row
      FROM pending_changes c
      JOIN view_members m ON m.view_id = ${view.id} AND m.data_source_id = c.data_source_id AND m.key = c.key
      WHERE c.token = ${write.token} AND c.view_id = 0 AND ${unchanged}
        AND NOT EXISTS (SELECT 1 FROM records r WHERE ${currentRecord('m')} AND r.panel_id = ${panel} AND ${where})`
  // Each row built and compared once (MATERIALIZED), whatever the planner would inline. Rows are
  // built by one expression (rowJson), so the same row is the same text: a row whose identity
  // (`_id`) did not change is compared as text, and only a re-identified one without its `_id`.
  if (order.values.length === 0 && view.summary === null) {
    // A view that neither sorts its members nor keeps a summary: every member holds the same
    // constant keys (an entered one gets them), and only a row or its identity moves.
    return [
      sql`WITH x AS MATERIALIZED (SELECT r.row_id AS id, r.data_source_id, r.key, ${matched}),
        y AS MATERIALIZED (SELECT x.data_source_id, x.key, x.id, x.row, ${moveKind('x')} AS kind FROM x)
      ${pending} ${sql.raw(memberKeyColumns((c) => `CASE WHEN y.kind = 'entered' THEN k.${c} END`))}
      FROM y, (SELECT ${memberKeyValues([], null)}) k WHERE y.kind IS NOT NULL`,
      left,
    ]
  }
  const rekeyed = memberKeysDiffer(
    (c) => `k.${c}`,
    (c) => `k.m${c}`,
  )
  return [
    // Its sort values read once (x), its order keys computed from them (k).
    sql`WITH x AS MATERIALIZED (
        SELECT r.row_id AS id, r.data_source_id, r.key, ${sql.raw(
          memberKeyColumns(
            (k) => `m.${k}`,
            (k) => `m${k}`,
          ),
        )} ${memberValueColumns(order)} ${summaryValueColumns(view.summary)}, ${matched}),
      k AS ${sql.raw(order.values.length > 0 ? 'MATERIALIZED' : 'NOT MATERIALIZED')} (
        SELECT x.id, x.data_source_id, x.key, x.row, x.member_row, x.member_id, ${sql.raw(
          memberKeyColumns(
            (c) => `x.m${c}`,
            (c) => `m${c}`,
          ),
        )},
          ${memberKeyValues(order.keys(valueNames('x')), summaryNames(view.summary, 'x'))}
        FROM x),
      y AS MATERIALIZED (
        SELECT k.data_source_id, k.key, k.id, k.row, ${sql.raw(memberKeyColumns((c) => `k.${c}`))},
          ${sql.raw(rekeyed)} AS rekeyed, ${moveKind('k', rekeyed)} AS kind
        FROM k)
      ${pending} ${sql.raw(memberKeyColumns((c) => `CASE WHEN y.kind = 'entered' OR y.rekeyed THEN y.${c} END`))}
      FROM y WHERE y.kind IS NOT NULL`,
    left,
  ]
}

/**
 * How a matched row moves in its view, over the columns of alias `a` (`row`, `member_row`, `id`,
 * `member_id`): entered, updated (the row as shown differs, its `_id` aside), moved (a new
 * identity, or `rekeyed`: its order keys or summary values differ), or not at all (null).
 */
function moveKind(a: string, rekeyed?: string): SQL {
  return sql.raw(`CASE WHEN ${a}.member_row IS NULL THEN 'entered'
      WHEN ${a}.member_row IS NOT ${a}.row
        AND (${a}.member_id IS ${a}.id OR json_remove(${a}.member_row, '$._id') IS NOT json_remove(${a}.row, '$._id')) THEN 'updated'
      WHEN ${a}.member_id IS NOT ${a}.id${rekeyed ? ` OR ${rekeyed}` : ''} THEN 'moved' END`)
}

/**
 * `row.entered`, `row.updated`, `row.left`, view by view, in a stable order. A `row.updated` is
 * stored with the row as the view showed it before (`previous`); readers answer it as `changed`
 * (src/rowstore/event-json.ts), so the write copies one text instead of diffing every column. The
 * rows are JSON texts the membership step built (rowJson), so the event's JSON is put together
 * around them as they are, not parsed and written again.
 */
function rowEventStatements(write: RowWrite): SQL[] {
  return appendEventsFrom(
    write.tenantId,
    sql`SELECT printf('%012d|%d|%012d|%s', p.view_id, CASE p.kind WHEN 'left' THEN 0 WHEN 'entered' THEN 1 ELSE 2 END,
          p.data_source_id, p.key) AS ord,
        'row.' || p.kind AS type, ${write.panelId} AS panel_id, p.view_id AS view_id, p.data_source_id AS data_source_id,
        '{"rowId":' || ifnull(p.row_id, 'null') || ',"key":' || json_quote(p.key) || ',"row":' || ifnull(p.row, 'null')
          || CASE p.kind WHEN 'updated' THEN ',"previous":' || ifnull(m.row, 'null') ELSE '' END || '}' AS data
      FROM pending_changes p
      LEFT JOIN view_members m ON p.kind = 'updated' AND m.view_id = p.view_id AND m.data_source_id = p.data_source_id AND m.key = p.key
      WHERE p.token = ${write.token} AND p.view_id <> 0 AND p.kind IN ('entered', 'updated', 'left')`,
    write.at,
  )
}

/** "View "Open cases": 12 rows entered, 3 left (sync)" to the owner of each view rows entered or left, but the actor. */
function noticeStatement(write: RowWrite): SQL {
  const rows = (n: string) => sql.raw(`${n} || CASE WHEN ${n} = 1 THEN ' row' ELSE ' rows' END`)
  return sql`INSERT INTO notifications (tenant_id, user_id, view_id, type, impact, message, is_read, dedupe_key, created_at)
    SELECT v.tenant_id, v.user_id, v.id, 'DATA_CHANGED', 'info',
      'View "' || v.name || '": ' || CASE WHEN x.e > 0 AND x.l > 0 THEN ${rows('x.e')} || ' entered, ' || x.l || ' left'
        WHEN x.e > 0 THEN ${rows('x.e')} || ' entered' ELSE ${rows('x.l')} || ' left' END || ${` (${write.cause})`},
      0, 'membership:' || v.id || ':' || ${write.eventKey}, ${write.at}
    FROM (SELECT view_id, sum(kind = 'entered') AS e, sum(kind = 'left') AS l FROM pending_changes
          WHERE token = ${write.token} AND view_id <> 0 GROUP BY view_id) x
    JOIN views v ON v.id = x.view_id
    WHERE (x.e > 0 OR x.l > 0) AND v.user_id <> ${write.actorId}
    ON CONFLICT DO NOTHING`
}

function memberUpdateStatements(write: RowWrite): SQL[] {
  const rekey = memberKeyColumns((k) => `${k} = excluded.${k}`)
  return [
    sql`DELETE FROM view_members WHERE (view_id, data_source_id, key) IN
      (SELECT view_id, data_source_id, key FROM pending_changes WHERE token = ${write.token} AND view_id <> 0 AND kind = 'left')`,
    sql`INSERT INTO view_members (view_id, data_source_id, key, tenant_id, panel_id, row_id, row, ${sql.raw(memberKeyColumns())})
      SELECT view_id, data_source_id, key, ${write.tenantId}, ${write.panelId}, row_id, row, ${sql.raw(memberKeyColumns())}
      FROM pending_changes WHERE token = ${write.token} AND view_id <> 0 AND kind = 'entered'
      ON CONFLICT (view_id, data_source_id, key) DO UPDATE SET row_id = excluded.row_id, row = excluded.row, ${sql.raw(rekey)}`,
    // A member whose order keys and summary values did not change (its pending keys are null) keeps its index entries.
    sql`UPDATE view_members SET row_id = p.row_id, row = p.row FROM pending_changes p
      WHERE p.token = ${write.token} AND p.view_id = view_members.view_id AND p.data_source_id = view_members.data_source_id
        AND p.key = view_members.key AND p.kind IN ('updated', 'moved') AND p.s0 IS NULL`,
    sql`UPDATE view_members SET row_id = p.row_id, row = p.row, ${sql.raw(memberKeyColumns((k) => `${k} = p.${k}`))}
      FROM pending_changes p
      WHERE p.token = ${write.token} AND p.view_id = view_members.view_id AND p.data_source_id = view_members.data_source_id
        AND p.key = view_members.key AND p.kind IN ('updated', 'moved') AND p.s0 IS NOT NULL`,
    // The views' totals move with their members: one more per row entered, one less per row left.
    sql`UPDATE views SET member_count = member_count + (SELECT sum(CASE kind WHEN 'entered' THEN 1 ELSE -1 END)
        FROM pending_changes WHERE token = ${write.token} AND view_id = views.id AND kind IN ('entered', 'left'))
      WHERE id IN (SELECT view_id FROM pending_changes WHERE token = ${write.token} AND view_id <> 0 AND kind IN ('entered', 'left'))`,
  ]
}

/** One `panel.rows_changed` when the write changed any row. */
function panelEventStatements(write: RowWrite): SQL[] {
  return appendEventsFrom(
    write.tenantId,
    sql`SELECT 1 AS ord, 'panel.rows_changed' AS type, ${write.panelId} AS panel_id, NULL AS view_id,
        ${write.dataSourceId ?? null} AS data_source_id,
        json_object('inserted', sum(kind = 'inserted'), 'updated', sum(kind = 'updated'), 'deleted', sum(kind = 'deleted'),
          'cause', ${write.cause}) AS data
      FROM pending_changes WHERE token = ${write.token} AND view_id = 0 AND kind IN ('inserted', 'updated', 'deleted')
      HAVING count(*) > 0`,
    write.at,
  )
}
