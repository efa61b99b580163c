import { and, eq, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../context.ts'
import { rowsAffected, runBatch } from '../db/client.ts'
import { panels } from '../db/schema.ts'
import type { Deps } from '../deps.ts'
import { type CellError, type MaterialisedRow, rematerialise } from '../engine/cells/materialise.ts'
import { sameJson } from '../lib/same-json.ts'
import { nextTurn } from '../lib/turn.ts'
import type { LiveBus } from '../live/bus.ts'
import { type ReadRow, type RowsTarget, rebuildRecords, recordRowsQuery, storedRowsOf } from './expand.ts'
import { heldPage, holdStatements, type ReadHeld, releaseByIds } from './held.ts'
import { loadPanelPlan, type PanelPlan, prepareRows, rowOf, trustedVersions } from './materialise.ts'
import { type RowWrite, resetStatements, writeToken } from './membership.ts'
import { loadPanelMembership, type PanelMembership, settle } from './membership-plan.ts'
import { insertRowStatements, type RowPayload } from './record-sql.ts'
import { type RowStore, rewriteRows } from './write.ts'

/**
 * Recomputing a panel's rows after its columns (or its ViewDefinition) changed: every row read in
 * batches by id, computed with the current plan (materialise.ts), and the rows whose cells changed
 * written back through the write protocol's rewrite (write.ts `rewriteRows`), so the views'
 * membership moves and the feed hears of it as for any other writer.
 */

/** Rows per recompute batch: read, computed and written back together. */
export const RECOMPUTE_BATCH = 1000
/** Panels with more rows than this are recomputed in the background after a column change. */
export const INLINE_RECOMPUTE_LIMIT = 5000

/**
 * Recomputes a panel's rows with its current columns, batch by batch (never loading the panel
 * whole), writing only rows whose cells or errors changed. When the columns change again meanwhile
 * it starts over with the new plan, so it ends with the panel marked up to date. Answers the number
 * of rows rewritten. An aborted `stop` (a stopping service) ends it between two batches with the
 * panel still marked stale, so the scheduler's sweep finishes it later.
 */
export async function recomputePanel(
  db: Deps['db'],
  tenantId: string,
  panelId: number,
  now: () => Date,
  stop?: AbortSignal,
  live?: LiveBus,
): Promise<number> {
  const store = { db, live }
  let written = 0
  for (;;) {
    const plan = await loadPanelPlan(db, tenantId, panelId)
    // Views whose columns or query changed are evaluated once at the end, not moved batch by batch
    // (a new column is a change of the view, not of each of its rows).
    const loaded = await loadPanelMembership(db, tenantId, panelId, { at: now() })
    const redefined = loaded.views.filter((v) => v.storedKey !== null && v.storedKey !== v.key)
    const membership = { ...loaded, views: loaded.views.filter((v) => !redefined.includes(v)) }
    // Rows stored with a plan of the same base columns keep their base cells (trustedVersions).
    const trusted = JSON.stringify(trustedVersions(db, tenantId, plan))
    let after = 0
    for (;;) {
      if (stop?.aborted) return written
      // Between batches the process serves others (a recompute of a million rows runs for a while).
      if (after > 0) await nextTurn()
      const from = after
      const page = plan.view ? [] : await readPage(db, { tenantId, panelId, after, trusted })
      // A panel defined by a view, or rows left by one, are rebuilt from their records (rebuildBatch).
      const rebuild = plan.view !== undefined || page.some((r) => r.keyed)
      const batch = rebuild
        ? await db.all<ReadRow>(sql`
          SELECT id, data_source_id, generation, key, record_key, data, cells, errors FROM records
          WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} AND id > ${from}
          ${page.length > 0 ? sql`AND id <= ${page[page.length - 1].id}` : sql``}
          ORDER BY id LIMIT ${RECOMPUTE_BATCH}`)
        : page
      if (batch.length === 0) break
      after = batch[batch.length - 1].id
      const at = now()
      // The rewritten rows move the views' membership in the same batch (cause: recompute).
      const write: RowWrite = {
        tenantId,
        panelId,
        actorId: 'system',
        cause: 'recompute',
        eventKey: `recompute:${plan.version}:${after}`,
        token: writeToken(),
        at: at.toISOString(),
      }
      if (rebuild) {
        const read = batch as ReadRow[]
        await prepareRows(
          plan,
          read.map((r) => JSON.parse(r.data) as unknown),
        )
        const rebuilt = await rebuildBatch(store, { tenantId, panelId, plan, batch: read, at }, membership, write)
        settle(membership)
        written += rebuilt
        continue
      }
      const changed = await changedRows(db, tenantId, plan, page, at)
      if (changed.length === 0) continue
      // `+records.tenant_id` keeps SQLite from driving the update by the tenant index (a scan of
      // every tenant row per payload row); the row ids come from a tenant-scoped read anyway.
      await rewriteRows(store, {
        panel: { tenantId, panelId },
        write,
        membership,
        ids: changed.map((c) => c[0]),
        statements: [
          sql`
          UPDATE records SET cells = j.value -> 1, errors = nullif(j.value -> 2, 'null'), cells_version = ${plan.version}
          FROM json_each(${JSON.stringify(changed)}) j
          WHERE records.id = j.value ->> 0 AND +records.tenant_id = ${tenantId}`,
        ],
      })
      settle(membership)
      written += changed.length
    }
    if (stop?.aborted) return written
    written += await restoreHeld(store, { tenantId, panelId, plan }, membership, now)
    const resets = redefined.flatMap((v) => resetStatements(loaded, v, { at: now().toISOString() }))
    if (resets.length > 0) {
      await runBatch(db, resets)
      live?.committed(tenantId)
    }
    const done = await db.run(sql`
      UPDATE panels SET materialised_version = ${plan.version}
      WHERE id = ${panelId} AND tenant_id = ${tenantId} AND columns_version = ${plan.version}`)
    if (rowsAffected(done) > 0) return written
    const [panel] = await db
      .select({ id: panels.id })
      .from(panels)
      .where(and(eq(panels.id, panelId), eq(panels.tenantId, tenantId)))
    if (!panel) return written
  }
}

/**
 * After a column change: small panels are recomputed before the answer, large ones in the
 * background through `ctx.defer` (the scheduler's step also picks up any panel left stale: one
 * handed back at shutdown, or cut short on Workers).
 */
export async function recomputeAfterColumnChange(ctx: ServiceContext, panelId: number): Promise<void> {
  // Its rows, and the records its view holds (held.ts), which a recompute may store as rows.
  const [{ n }] = await ctx.db.all<{ n: number }>(sql`SELECT
    (SELECT count(*) FROM records WHERE tenant_id = ${ctx.scope.tenantId} AND panel_id = ${panelId})
    + (SELECT count(*) FROM held_records WHERE tenant_id = ${ctx.scope.tenantId} AND panel_id = ${panelId}) AS n`)
  const run = () => recomputePanel(ctx.db, ctx.scope.tenantId, panelId, () => ctx.clock.now(), ctx.stopping, ctx.live)
  if (Number(n) <= INLINE_RECOMPUTE_LIMIT) {
    await run()
    return
  }
  ctx.defer(run(), { what: 'recompute', tenantId: ctx.scope.tenantId, panelId })
}

/** Columns changed while a sync wrote rows with the older plan: bring those rows up to date. */
export async function catchUpColumnChanges(ctx: ServiceContext, panelId: number, plan: PanelPlan) {
  const [panel] = await ctx.db.all<{ v: number }>(sql`SELECT columns_version AS v FROM panels WHERE id = ${panelId}`)
  if (panel && Number(panel.v) !== plan.version) await recomputeAfterColumnChange(ctx, panelId)
}

/** The scheduler's sweep: recomputes panels whose rows are stale (at most `limit` panels per call). */
export async function recomputeStalePanels(deps: Deps, limit = 5): Promise<number> {
  const stale = await deps.db.all<{ id: number; tenant_id: string }>(sql`
    SELECT id, tenant_id FROM panels
    WHERE deleted_at IS NULL AND materialised_version <> columns_version
    LIMIT ${limit}`)
  let rows = 0
  for (const p of stale) {
    rows += await recomputePanel(deps.db, p.tenant_id, p.id, () => deps.clock.now(), deps.stopping, deps.live)
  }
  return rows
}

// --- Internal helpers ---

/**
 * A row as a recompute reads it first: without its record's data, which only rows materialised
 * again from their records need (withData); `kept`: stored with a trusted plan (trustedVersions).
 */
interface PageRow {
  id: number
  data_source_id: number
  keyed: boolean
  /** The stored cells and errors, parsed (null when none are stored). */
  cells: unknown
  errors: unknown
  kept: boolean
  /** The record's data, when read with the row (no trusted plan: every row is materialised again). */
  data?: string
}

/** Rows per JSON text of a page (an integer in the SQL text: a bound number divides as a real): each text stays far below a D1 string's 2 MB. */
const PAGE_GROUP = 50

/**
 * The next RECOMPUTE_BATCH rows of the panel after id `after`, in id order. Read as a few JSON
 * texts of PAGE_GROUP rows each rather than a result row per row: the database client's cost per
 * row and column is most of a plain read's (docs/performance.md, "Recompute").
 */
async function readPage(
  db: Deps['db'],
  { tenantId, panelId, after, trusted }: { tenantId: string; panelId: number; after: number; trusted: string },
): Promise<PageRow[]> {
  if (trusted === '[]') {
    const rows = await db.all<{
      id: number
      data_source_id: number
      record_key: string | null
      cells: string | null
      errors: string | null
      data: string
    }>(sql`
      SELECT id, data_source_id, record_key, cells, errors, data FROM records
      WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} AND id > ${after}
      ORDER BY id LIMIT ${RECOMPUTE_BATCH}`)
    // Every row is materialised from its record; stored texts that are not JSON compare as none.
    return rows.map((r) => ({
      ...r,
      cells: parsedText(r.cells).value,
      errors: parsedText(r.errors).value,
      keyed: r.record_key !== null,
      kept: false,
    }))
  }
  // Groups of at most PAGE_GROUP rows by id (fewer where ids of other panels lie between): no
  // window over the page to number its rows.
  const page = (rows: SQL) => sql`
    SELECT ${rows} AS rows
    FROM (SELECT id, data_source_id, record_key, cells, errors, cells_version FROM records
      WHERE tenant_id = ${tenantId} AND panel_id = ${panelId} AND id > ${after} ORDER BY id LIMIT ${RECOMPUTE_BATCH})
    GROUP BY id / ${sql.raw(String(PAGE_GROUP))}`
  const trustedCells = sql`coalesce(cells IS NOT NULL AND cells_version IN (SELECT value FROM json_each(${trusted})), 0)`
  // Stored cells and errors are JSON texts: each row is written as a JSON array around them as they
  // are, so one parse gives the cells, with nothing escaped on one side and unescaped on the other.
  const groups = await db.all<{ rows: string }>(
    page(sql`'[' || group_concat(printf('[%d,%d,%d,%d,%s,%s]', id, data_source_id, record_key IS NOT NULL, ${trustedCells},
      ifnull(errors, 'null'), ifnull(cells, 'null')), ',') || ']'`),
  )
  let parsed: [number, number, number, number, unknown, unknown][][]
  try {
    parsed = groups.map((g) => JSON.parse(g.rows))
  } catch {
    // A stored text that is not JSON (written by hand): the rows are read with their texts quoted.
    const quoted = await db.all<{ rows: string }>(
      page(sql`json_group_array(json_array(id, data_source_id, record_key IS NOT NULL, ${trustedCells}, errors, cells))`),
    )
    parsed = quoted.map((g) =>
      (JSON.parse(g.rows) as [number, number, number, number, string | null, string | null][]).map(
        ([id, source, keyed, isKept, errors, cells]) => {
          const [e, c] = [parsedText(errors), parsedText(cells)]
          // A row whose stored texts do not parse is materialised again from its record.
          return [id, source, keyed, e.ok && c.ok ? isKept : 0, e.value, c.value]
        },
      ),
    )
  }
  const rows: PageRow[] = []
  for (const group of parsed) {
    for (const [id, source, keyed, isKept, errors, cells] of group) {
      rows.push({ id, data_source_id: source, keyed: keyed === 1, cells, errors, kept: isKept === 1 })
    }
  }
  return rows.sort((a, b) => a.id - b.id)
}

/** A stored JSON text parsed (null for none); `ok` false when it is not JSON. */
function parsedText(text: string | null): { ok: boolean; value: unknown } {
  try {
    return { ok: true, value: JSON.parse(text ?? 'null') }
  } catch {
    return { ok: false, value: null }
  }
}

/**
 * The rows of a batch whose cells or errors differ under `plan`, as `[id, cells, errors | null]`.
 * A row read without its data keeps its base cells and has its calculated ones evaluated again
 * (`rematerialise`); the others, and any whose stored cells do not allow it, are materialised
 * again from their records.
 */
async function changedRows(db: Deps['db'], tenantId: string, plan: PanelPlan, batch: PageRow[], at: Date) {
  const rows: (MaterialisedRow | undefined)[] = batch.map((r) => (r.kept ? kept(plan, r, at) : undefined))
  const fresh = batch.flatMap((_, i) => (rows[i] === undefined ? [i] : []))
  const read = await withData(
    db,
    tenantId,
    fresh.map((i) => batch[i]),
  )
  const data = read.map((r) => JSON.parse(r.data) as unknown)
  await prepareRows(plan, data)
  for (const [n, r] of read.entries()) rows[fresh[n]] = rowOf(plan, r.data_source_id, data[n], at)
  const changed: [number, Record<string, unknown>, CellError[] | null][] = []
  for (const [i, r] of batch.entries()) {
    const row = rows[i] as MaterialisedRow
    const errors = row.errors.length > 0 ? row.errors : null
    if (!sameJson(row.cells, r.cells) || !sameJson(errors, r.errors)) changed.push([r.id, row.cells, errors])
  }
  return changed
}

/** A row from its stored cells (engine/cells `rematerialise`); undefined when they do not allow it. */
function kept(plan: PanelPlan, r: PageRow, at: Date): MaterialisedRow | undefined {
  const { cells, errors } = r
  if (typeof cells !== 'object' || cells === null || Array.isArray(cells)) return undefined
  if (errors !== null && !Array.isArray(errors)) return undefined
  return rematerialise(plan.plan, { cells: cells as Record<string, unknown>, errors: errors as CellError[] | null }, at)
}

/** The records' data of `rows`, in their order. */
async function withData(db: Deps['db'], tenantId: string, rows: PageRow[]): Promise<(PageRow & { data: string })[]> {
  if (rows.every((r) => r.data !== undefined)) return rows as (PageRow & { data: string })[]
  const found = await db.all<{ id: number; data: string }>(sql`
    SELECT id, data FROM records WHERE id IN (SELECT value FROM json_each(${JSON.stringify(rows.map((r) => r.id))}))
      AND +tenant_id = ${tenantId}`)
  const byId = new Map(found.map((f) => [Number(f.id), f.data]))
  return rows.map((r) => ({ ...r, data: r.data ?? byId.get(r.id) ?? 'null' }))
}

/** A recompute batch of a panel defined by a view (or left by one): its records stored again, rows added and removed. */
async function rebuildBatch(
  store: RowStore,
  { tenantId, panelId, plan, batch, at }: { tenantId: string; panelId: number; plan: PanelPlan; batch: ReadRow[]; at: Date },
  membership: PanelMembership,
  write: RowWrite,
) {
  const { db } = store
  const groups = new Map<string, { target: RowsTarget; keys: Set<string> }>()
  for (const r of batch) {
    const id = `${r.data_source_id}:${r.generation}`
    const group = groups.get(id) ?? { target: { dataSourceId: r.data_source_id, generation: r.generation }, keys: new Set() }
    groups.set(id, group)
    group.keys.add(r.record_key ?? r.key)
  }
  const existing = (
    await Promise.all([...groups.values()].map((g) => db.all<ReadRow>(recordRowsQuery(tenantId, panelId, g.target, [...g.keys]))))
  ).flat()
  const change = rebuildRecords(plan.view, batch, existing, (row, dataSourceId) => {
    const { cells, errors } = rowOf(plan, dataSourceId, row.data, at, row)
    return { cells: JSON.stringify(cells), errors: errors.length > 0 ? JSON.stringify(errors) : null }
  })
  const now = at.toISOString()
  const statements: SQL[] = []
  // Records whose rows all went are held, to be stored again by a later view (held.ts); before
  // their rows are deleted, so they keep those rows' time.
  for (const { target, records } of change.held) {
    statements.push(...holdStatements({ tenantId, panelId, ...target }, [], records, now))
  }
  if (change.deleteIds.length > 0) {
    statements.push(sql`DELETE FROM records WHERE id IN (SELECT value FROM json_each(${JSON.stringify(change.deleteIds)}))
      AND +tenant_id = ${tenantId}`)
  }
  if (change.updates.length > 0) {
    statements.push(sql`
      UPDATE records SET cells = json(j.value ->> 1), errors = j.value ->> 2, record_key = j.value ->> 3,
        cells_version = ${plan.version}
      FROM json_each(${JSON.stringify(change.updates)}) j
      WHERE records.id = j.value ->> 0 AND +records.tenant_id = ${tenantId}`)
  }
  const added = []
  for (const { target, rows } of change.inserts) {
    added.push({ ...target, keys: rows.map((r) => r.key) })
    const payload = rows.map((r) => ({
      key: r.key,
      recordKey: r.recordKey,
      data: r.json,
      cells: r.cells,
      errors: r.errors ?? 'null',
    }))
    statements.push(...insertRowStatements({ tenantId, panelId, ...target }, payload, plan.version, now, 'replace'))
  }
  if (statements.length > 0) {
    const ids = [...change.deleteIds, ...change.updates.map((u) => u[0] as number)]
    await rewriteRows(store, { panel: { tenantId, panelId }, write, membership, ids, added, statements })
  }
  return change.deleteIds.length + change.updates.length + change.inserts.reduce((n, g) => n + g.rows.length, 0)
}

/**
 * After a panel's rows are recomputed: its held records (held.ts) that the current view (or no
 * view) gives rows are stored as those rows and released, page by page through the write
 * protocol's rewrite. The others stay held. Answers the number of rows stored.
 */
async function restoreHeld(
  store: RowStore,
  { tenantId, panelId, plan }: { tenantId: string; panelId: number; plan: PanelPlan },
  membership: PanelMembership,
  now: () => Date,
): Promise<number> {
  let written = 0
  let after = 0
  for (;;) {
    const page = await store.db.all<ReadHeld>(heldPage(tenantId, panelId, after, RECOMPUTE_BATCH))
    if (page.length === 0) return written
    after = page[page.length - 1].id
    const at = now()
    const released: number[] = []
    const groups = new Map<string, { target: RowsTarget; rows: RowPayload[] }>()
    // A record a writer stored rows for since it was held (a sync without the view, while this
    // recompute was pending) has newer data there: it is only released.
    const stored = await storedRecordKeys(store, tenantId, panelId, page)
    const expanded = page.map((h) => {
      if (stored.has(`${h.data_source_id}:${h.generation}:${h.key}`)) {
        released.push(h.id)
        return { h, rows: [] }
      }
      const data = JSON.parse(h.data) as Record<string, unknown>
      return { h, rows: storedRowsOf(plan.view, h.data_source_id, { key: h.key, data, json: h.data }) }
    })
    await prepareRows(
      plan,
      expanded.filter((e) => e.rows.length > 0).map((e) => e.rows[0].data),
    )
    for (const { h, rows } of expanded) {
      if (rows.length === 0) continue
      released.push(h.id)
      const id = `${h.data_source_id}:${h.generation}`
      let group = groups.get(id)
      if (!group) {
        group = { target: { dataSourceId: h.data_source_id, generation: h.generation }, rows: [] }
        groups.set(id, group)
      }
      for (const row of rows) {
        const { cells, errors } = rowOf(plan, h.data_source_id, row.data, at, row)
        group.rows.push({
          key: row.key,
          recordKey: row.recordKey,
          data: row.json,
          cells: JSON.stringify(cells),
          errors: errors.length > 0 ? JSON.stringify(errors) : 'null',
        })
      }
    }
    if (released.length === 0) continue
    if (groups.size === 0) {
      await store.db.run(releaseByIds(tenantId, released))
      continue
    }
    const stamp = at.toISOString()
    const write: RowWrite = {
      tenantId,
      panelId,
      actorId: 'system',
      cause: 'recompute',
      eventKey: `recompute:${plan.version}:held:${after}`,
      token: writeToken(),
      at: stamp,
    }
    const groupList = [...groups.values()]
    await rewriteRows(store, {
      panel: { tenantId, panelId },
      write,
      membership,
      ids: [],
      added: groupList.map((g) => ({ ...g.target, keys: g.rows.map((r) => r.key) })),
      statements: [
        ...groupList.flatMap((g) => insertRowStatements({ tenantId, panelId, ...g.target }, g.rows, plan.version, stamp, 'keep')),
        releaseByIds(tenantId, released),
      ],
    })
    settle(membership)
    written += groupList.reduce((n, g) => n + g.rows.length, 0)
  }
}

/** `<source>:<generation>:<record key>` of the held records of `page` that have stored rows. */
async function storedRecordKeys(store: RowStore, tenantId: string, panelId: number, page: ReadHeld[]): Promise<Set<string>> {
  const groups = new Map<string, { target: RowsTarget; keys: string[] }>()
  for (const h of page) {
    const id = `${h.data_source_id}:${h.generation}`
    const group = groups.get(id) ?? { target: { dataSourceId: h.data_source_id, generation: h.generation }, keys: [] }
    groups.set(id, group)
    group.keys.push(h.key)
  }
  const rows = (
    await Promise.all(
      [...groups.values()].map((g) => store.db.all<ReadRow>(recordRowsQuery(tenantId, panelId, g.target, g.keys))),
    )
  ).flat()
  return new Set(rows.map((r) => `${r.data_source_id}:${r.generation}:${r.record_key ?? r.key}`))
}
