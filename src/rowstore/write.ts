import { type SQL, sql } from 'drizzle-orm'
import { type BatchStatement, type Db, runBatch } from '../db/client.ts'
import type { LiveBus } from '../live/bus.ts'
import { dropHeldOfSource, dropHeldOlder } from './held.ts'
import {
  deleteIdentities,
  generationSwitchIdentities,
  recordIdentities,
  sourceRemovalIdentities,
  upsertIdentities,
  writtenRowIdentities,
} from './identities.ts'
import { membershipStatements, type RowWrite, writeToken } from './membership.ts'
import { loadPanelMembership, type PanelMembership } from './membership-plan.ts'
import { deleteStatements, type KeyedRecord, type RowSource, type RowWriter, upsertStatements } from './records.ts'
import { dropIdentitiesOfSource } from './work-sql.ts'
import { enteredStatements } from './work-time.ts'

export type { RowSource, RowWrite }

/**
 * The row store's ONE write protocol (docs/live.md "The write path"). Every writer of rows — a
 * sync's batch, a webhook delivery, an import, a full sync's generation switch, and the writers to
 * come (work state, FHIR subscription notifications) — hands its change to `writeRows` or
 * `switchGeneration`, which put the statements in the one order that keeps the change feed right:
 *
 * 1. the membership step's *before* (views never evaluated are evaluated from the rows as they were);
 * 2. the identities the write changes (`pending_changes`), compared with the rows as they were;
 * 3. the row statements;
 * 4. the identities of the rows written (a ViewDefinition panel's rows of the written records),
 *    then those that entered the panel for the first time (`entered_at`, and the SLA's `dueAt`:
 *    work-time.ts `enteredStatements`);
 * 5. the membership step's *after* (moves, `row.*` and `panel.rows_changed` events, notices);
 * 6. the writer's own statements (cursor, event ids, lease renewal, run counters, change record);
 *
 * all in one `db.batch` (one transaction), and after the commit `live.committed(tenantId)`, so the
 * feed's streams read the events at once. A writer never assembles this order itself. A writer's
 * statements that move no visible row but append events (a run's end after its batches, a failed
 * run's partial generation dropped) commit through `commitEvents`, which wakes the feed alike.
 */

export type { BatchStatement }

/** What the protocol needs of its caller's context (a ServiceContext is one). */
export interface RowStore {
  db: Db
  /** Woken after a commit that appended events; absent for a caller that has no bus. */
  live?: Pick<LiveBus, 'committed'>
}

/** Who makes a write and why (a RowWrite without its scratch token). */
export type WriteCause = Omit<RowWrite, 'token'>

/** A write's events: who makes it, why, and the scratch token of its batch. */
export const rowWrite = (cause: WriteCause): RowWrite => ({ ...cause, token: writeToken() })

/** One batch write of records by key into one generation of a source. */
export interface BatchWrite {
  source: RowSource
  generation: number
  /**
   * The write's events (`rowWrite`). Absent for a generation readers do not see yet (a full
   * sync's, a webhook snapshot's): such a write lists no identities, moves no membership, appends
   * no events; its generation's switch does (`switchGeneration`).
   */
  write?: RowWrite
  /** The panel's views (`loadPanelMembership`); read here when a write with events does not bring them. */
  membership?: PanelMembership
  /** `updated_at` of the rows written. */
  now: string
  /** Records upserted by key, materialised by `rows` (records.ts `upsertStatements`). */
  upserts?: readonly KeyedRecord[]
  rows?: RowWriter
  /** Keys of records deleted. */
  deletes?: readonly string[]
  /**
   * Rows the writer stores with its own statements (an import's inserts by key, in-place updates
   * by record id, a source's removal): the keys and ids they write, for the identities, and the
   * statements. `removesSource`: the statements remove the source with every record it has.
   */
  own?: {
    keys?: readonly string[]
    ids?: readonly number[]
    removesSource?: boolean
    statements: readonly BatchStatement[]
  }
  /** The writer's statements, committed after the write in the same batch; `writeRows` answers their results. */
  with?: readonly BatchStatement[]
}

/** A full sync's switch of the visible generation, in one batch with the run's end. */
export interface GenerationSwitch {
  source: RowSource & { currentGeneration: number; generationDigest: string | null }
  /** The generation made visible. */
  to: number
  write: RowWrite
  /** The digest of the rows of `to` (digest.ts): the same as the visible generation's, nothing is compared. */
  digest?: string
  /** The switch happens only while this holds (the run still holds the source's lease). */
  when: SQL
  /** The writer's statements, after the switch in the same batch (the run's end, its events, the change record). */
  with?: readonly BatchStatement[]
}

/**
 * A recompute's rewrite of a panel's rows in place (new columns, a changed ViewDefinition): rows
 * rewritten or deleted by record id, rows added per generation of a source, across the panel.
 */
export interface PanelRewrite {
  panel: { tenantId: string; panelId: number }
  write: RowWrite
  membership: PanelMembership
  /** Records the statements rewrite or delete, by id. */
  ids: readonly number[]
  /** Rows the statements add, by the generation of the source they go into. */
  added?: readonly { dataSourceId: number; generation: number; keys: readonly string[] }[]
  statements: readonly BatchStatement[]
}

/**
 * Writes one batch (upserts and deletes by key, the writer's own row statements) in the protocol's
 * order, commits it with the writer's statements and wakes the feed when it has events. Answers
 * the results of `with`, in order.
 */
export async function writeRows(store: RowStore, change: BatchWrite): Promise<unknown[]> {
  const { source, generation, write, own } = change
  const deleted = change.deletes ?? []
  const written = [...(change.upserts ?? []).map((r) => r.key), ...(own?.keys ?? [])]
  // A write with events: what it changes, listed before and after its rows, and the views' step.
  const before = write
    ? [
        ...upsertIdentities(write, source.id, generation, written),
        ...deleteIdentities(write, source.id, generation, deleted),
        ...recordIdentities(write, own?.ids ?? []),
        ...(own?.removesSource ? sourceRemovalIdentities(write, source.id) : []),
      ]
    : []
  const loaded = write
    ? (change.membership ?? (await loadPanelMembership(store.db, source.tenantId, source.panelId, { at: write.at })))
    : undefined
  const after =
    write && loaded
      ? [...writtenRowIdentities(write, source.id, generation, written), ...enteredStatements(write, loaded.slaMs)]
      : []
  const membership = write && loaded ? membershipStatements(loaded, write) : { before: [], after: [] }
  const upserts = change.upserts ?? []
  if (upserts.length > 0 && !change.rows) throw new Error('writeRows: upserts need the RowWriter that materialises them')
  const rows = [
    ...(upserts.length > 0 && change.rows ? await upsertStatements(source, generation, upserts, change.now, change.rows) : []),
    ...deleteStatements(source, generation, deleted),
    ...(own?.statements ?? []),
    // A source removed takes its held records (held.ts) and its rows' identities with their work
    // state and comments (work-sql.ts) too, whether or not foreign keys cascade.
    ...(own?.removesSource ? [dropHeldOfSource(source.id), ...dropIdentitiesOfSource(source.id)] : []),
  ]
  const digests = write ? [forgetDigest(sql`id = ${source.id}`)] : []
  const results = await run(store, ordered({ membership, before, rows: [...rows, ...digests], after }), change.with ?? [])
  if (write) store.live?.committed(source.tenantId)
  return results
}

/**
 * A full sync's switch to generation `to`: the identities that differ from the visible generation
 * (none when the digests agree), the switch, the membership step, the older generations dropped,
 * then the writer's statements; one batch, then the feed is woken. Answers the results of `with`.
 */
export async function switchGeneration(store: RowStore, change: GenerationSwitch): Promise<unknown[]> {
  const { source, to, write, when } = change
  // Rows with the digest of the visible generation's are those rows: nothing to compare.
  const unchanged = change.digest !== undefined && source.generationDigest === change.digest
  const identities = unchanged ? [] : generationSwitchIdentities(write, source.id, source.currentGeneration, to, when)
  const loaded = await loadPanelMembership(store.db, source.tenantId, source.panelId, { at: write.at })
  const membership = membershipStatements(loaded, write)
  const rows = [
    sql`UPDATE data_sources SET current_generation = ${to}, generation_digest = ${change.digest ?? null}
      WHERE id = ${source.id} AND ${when}`,
  ]
  // The older generations (their rows and held records) go once the views have moved.
  const dropOlder = sql`DELETE FROM records WHERE data_source_id = ${source.id} AND generation < ${to}
    AND (SELECT current_generation FROM data_sources WHERE id = ${source.id}) = ${to}`
  const results = await run(
    store,
    [
      ...ordered({ membership, before: identities, rows, after: enteredStatements(write, loaded.slaMs) }),
      dropOlder,
      dropHeldOlder(source.id, to),
    ],
    change.with ?? [],
  )
  store.live?.committed(source.tenantId)
  return results
}

/**
 * A writer's statements that move no visible row but append events (the end of a run whose rows
 * committed with its batches, a failed run's partial generation dropped): one batch, then the feed
 * is woken. Answers the statements' results, in order.
 */
export async function commitEvents(
  store: RowStore,
  tenantId: string,
  statements: readonly BatchStatement[],
): Promise<readonly unknown[]> {
  const results = await run(store, [], statements)
  store.live?.committed(tenantId)
  return results
}

/**
 * A recompute's rewrite of a panel's rows (PanelRewrite): the identities of the records it rewrites
 * and of the rows it adds, its statements, the panel's digests forgotten, the membership step; one
 * batch, then the feed is woken.
 */
export async function rewriteRows(store: RowStore, change: PanelRewrite): Promise<void> {
  const { panel, write } = change
  const before = [
    ...recordIdentities(write, change.ids),
    ...(change.added ?? []).flatMap((a) => upsertIdentities(write, a.dataSourceId, a.generation, a.keys)),
  ]
  const rows = [...change.statements, forgetDigest(sql`tenant_id = ${panel.tenantId} AND panel_id = ${panel.panelId}`)]
  const after = enteredStatements(write, change.membership.slaMs)
  await run(store, ordered({ membership: membershipStatements(change.membership, write), before, rows, after }), [])
  store.live?.committed(panel.tenantId)
}

/**
 * A change of work state (work-sql.ts `workChangeStatements`), or of its derived comment count
 * (`derivedWorkStatements`, with the comment's own statements in `apply`): the identities it
 * captures (and lists for the views), its statements, then `read` — a select answered as the
 * result, before the membership step clears the scratch rows — and the membership step; one batch,
 * then the feed is woken. The rows' data is not touched: only views that show or filter on a
 * virtual column move.
 */
export interface WorkChange {
  panel: { tenantId: string; panelId: number }
  write: RowWrite
  membership?: PanelMembership
  capture: readonly SQL[]
  /**
   * Statements that list the captured identities for the membership step (view 0 of
   * `pending_changes`), run after `capture` only when the step reads that list (a view moves); a
   * change may as well keep them in `capture`.
   */
  listed?: readonly SQL[]
  apply: readonly BatchStatement[]
  read: SQL
}

/** Writes a work change in the protocol's order; answers the rows `read` selected. */
export async function changeWork(store: RowStore, change: WorkChange): Promise<Record<string, unknown>[]> {
  const { panel, write } = change
  const loaded = change.membership ?? (await loadPanelMembership(store.db, panel.tenantId, panel.panelId, { at: write.at }))
  // Only a view that filters on or shows a virtual column can move when work state alone changes.
  const moving = loaded.views.filter((v) => v.readsWork)
  const membership = membershipStatements({ ...loaded, views: moving }, write)
  // The step reads the listed identities to move views (those whose query compiles) and, for a
  // write that is not a work change, for `panel.rows_changed` (membership.ts).
  const listed = moving.some((v) => v.where) || write.cause !== 'work' ? (change.listed ?? []) : []
  const before = [...change.capture, ...listed]
  const read = store.db.all<Record<string, unknown>>(change.read)
  const statements = ordered({ membership, before, rows: [...change.apply, read], after: [] })
  const results = await runBatch(store.db, statements)
  store.live?.committed(panel.tenantId)
  return results[membership.before.length + before.length + change.apply.length] as Record<string, unknown>[]
}

// --- Internal helpers ---

/**
 * THE order of a write (the module comment's steps 1 to 5): the membership step's before, the
 * identities the write changes, the row statements, the identities of the rows written (and their
 * first entry), the membership step's after. Every form above builds its batch through here.
 */
function ordered(parts: {
  membership: { before: readonly SQL[]; after: readonly SQL[] }
  before: readonly SQL[]
  rows: readonly BatchStatement[]
  after: readonly SQL[]
}): BatchStatement[] {
  return [...parts.membership.before, ...parts.before, ...parts.rows, ...parts.after, ...parts.membership.after]
}

/** Rows rewritten in place: the sources' generations no longer match the digests of their full syncs. */
const forgetDigest = (which: SQL) =>
  sql`UPDATE data_sources SET generation_digest = NULL WHERE ${which} AND generation_digest IS NOT NULL`

/** One batch: the protocol's statements, then the writer's; answers the writer's results. */
async function run(store: RowStore, statements: readonly BatchStatement[], own: readonly BatchStatement[]): Promise<unknown[]> {
  if (statements.length + own.length === 0) return []
  const results = await runBatch(store.db, [...statements, ...own])
  return results.slice(statements.length)
}
