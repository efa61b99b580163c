import { type SQL, sql } from 'drizzle-orm'
import type { CellKind } from '../../engine/cells/coerce.ts'
import type { ColumnLookup, ColumnRef } from '../../engine/filters/resolve.ts'

/**
 * The virtual columns of a row's work state (WORKLIST.md §2, docs/worklist.md): `_status`,
 * `_assignee`, `_claimExpiresAt`, `_dueAt`, `_snoozedUntil`, `_overdue`, `_snoozed` and
 * `_commentCount`. Each is an expression over `records.work` (the JSON copy of the identity's work
 * state, rowstore/work-sql.ts), whose fields the panel's row index holds (`WORK_INDEX_EXPRESSIONS`),
 * so filtering and sorting on them reads no table row. Values that depend on the time (`_overdue`,
 * `_snoozed`, an expired claim's `_assignee` and `_claimExpiresAt`) are computed against the
 * reader's `now`; the same rules in JavaScript (`virtualValue`) shape the rows answered.
 */

/** The fields of `records.work` (work-sql.ts `workJson` writes them). */
export interface WorkCopy {
  status?: string
  assignee?: string | null
  claimExpiresAt?: string | null
  dueAt?: string | null
  snoozedUntil?: string | null
  commentCount?: number
}

/** The status of a row nobody has worked. */
export const DEFAULT_STATUS = 'open'

const VIRTUAL = {
  _status: { id: -1, kind: 'text' },
  _assignee: { id: -2, kind: 'text' },
  _claimExpiresAt: { id: -3, kind: 'datetime' },
  _dueAt: { id: -4, kind: 'datetime' },
  _snoozedUntil: { id: -5, kind: 'datetime' },
  _overdue: { id: -6, kind: 'boolean' },
  _snoozed: { id: -7, kind: 'boolean' },
  _commentCount: { id: -8, kind: 'number' },
} as const satisfies Record<string, { id: number; kind: CellKind }>

export type VirtualName = keyof typeof VIRTUAL

export const VIRTUAL_NAMES = Object.keys(VIRTUAL) as VirtualName[]

/** What the time-dependent columns are computed with: the reader's now, the panel's done statuses. */
export interface WorkClock {
  now: string
  done: readonly string[]
}

export const isVirtualName = (name: string): name is VirtualName => Object.hasOwn(VIRTUAL, name)

/** The virtual column of that name at `clock`, or undefined. */
export function virtualColumn(name: string, clock: WorkClock): ColumnRef | undefined {
  if (!isVirtualName(name)) return undefined
  const v = VIRTUAL[name]
  return { id: v.id, name, kind: v.kind, virtual: { now: clock.now, done: clock.done } }
}

/** A panel's columns by name, then the virtual columns (a real column of the same name wins). */
export const withVirtual =
  (lookup: ColumnLookup, clock: WorkClock): ColumnLookup =>
  (name) =>
    lookup(name) ?? virtualColumn(name, clock)

/** The work fields the panel's row index holds, as its expressions (row-index.ts). */
export const WORK_INDEX_EXPRESSIONS = ['status', 'assignee', 'claimExpiresAt', 'dueAt', 'snoozedUntil', 'commentCount'].map(
  (f) => `(work ->> '$.${f}')`,
)

/** The SQL value of a virtual column over the `r` (records) alias. */
export function virtualSql(column: ColumnRef): SQL {
  const clock = column.virtual
  if (!clock) throw new Error(`${column.name} is not a virtual column`)
  const f = (field: string) => sql.raw(`(r.work ->> '$.${field}')`)
  const status = sql`coalesce(${f('status')}, ${DEFAULT_STATUS})`
  switch (column.name as VirtualName) {
    case '_status':
      return status
    case '_assignee':
      return sql`(CASE WHEN ${f('claimExpiresAt')} IS NULL OR ${f('claimExpiresAt')} > ${clock.now} THEN ${f('assignee')} END)`
    case '_claimExpiresAt':
      return sql`(CASE WHEN ${f('claimExpiresAt')} > ${clock.now} THEN ${f('claimExpiresAt')} END)`
    case '_dueAt':
      return f('dueAt')
    case '_snoozedUntil':
      return f('snoozedUntil')
    case '_overdue': {
      const done =
        clock.done.length > 0
          ? sql` AND ${status} NOT IN (${sql.join(
              clock.done.map((d) => sql`${d}`),
              sql`, `,
            )})`
          : sql``
      return sql`(CASE WHEN ${f('dueAt')} < ${clock.now}${done} THEN 1 ELSE 0 END)`
    }
    case '_snoozed':
      return sql`(CASE WHEN ${f('snoozedUntil')} > ${clock.now} THEN 1 ELSE 0 END)`
    case '_commentCount':
      return sql`coalesce(${f('commentCount')}, 0)`
  }
}

/** A virtual column's value for a row whose work copy is `work` (null: never worked), as the SQL above computes it. */
export function virtualValue(column: ColumnRef, work: WorkCopy | null): unknown {
  const clock = column.virtual
  if (!clock) return undefined
  const w = work ?? {}
  const status = w.status ?? DEFAULT_STATUS
  const claimed = w.claimExpiresAt ?? null
  switch (column.name as VirtualName) {
    case '_status':
      return status
    case '_assignee':
      return claimed === null || claimed > clock.now ? (w.assignee ?? null) : null
    case '_claimExpiresAt':
      return claimed !== null && claimed > clock.now ? claimed : null
    case '_dueAt':
      return w.dueAt ?? null
    case '_snoozedUntil':
      return w.snoozedUntil ?? null
    case '_overdue':
      return w.dueAt != null && w.dueAt < clock.now && !clock.done.includes(status)
    case '_snoozed':
      return w.snoozedUntil != null && w.snoozedUntil > clock.now
    case '_commentCount':
      return w.commentCount ?? 0
  }
}

/** A filter criterion as stored (FilterCriteria), for `@me`. */
interface Criterion {
  columnTitle?: string
  value?: unknown
  conditions?: Criterion[]
}

/** Criteria with `@me` (as a value of `_assignee`, alone or in a list) replaced by the reader's user id. */
export function meInFilters<T extends Criterion>(list: readonly T[], userId: string): T[] {
  const swap = (v: unknown): unknown => (v === '@me' ? userId : Array.isArray(v) ? v.map(swap) : v)
  return list.map((c) => ({
    ...c,
    ...(c.columnTitle === '_assignee' && c.value !== undefined ? { value: swap(c.value) } : {}),
    ...(c.conditions ? { conditions: meInFilters(c.conditions, userId) } : {}),
  }))
}
