import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { conflict, invalid, notFound, permissionDenied, preconditionFailed } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { cell } from '../../rowstore/query/filter-sql.ts'
import { type RecordRow, type Row, toRow } from '../../rowstore/query/row-shape.ts'
import { virtualColumn, type WorkClock } from '../../rowstore/query/virtual.ts'
import { workStateJson } from '../../rowstore/work-sql.ts'
import { statusesSql, workClock, workflowOf } from '../../rowstore/workflow.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { findRow, isManager, openRows, type RowsAccess, type RowsPath, requireRowPermission } from './work.access.ts'
import type { WorkPatchInput, WorkStateDto } from './work.schemas.ts'
import { applyWork } from './work.write.ts'

/**
 * Working a row (WORKLIST.md §3, docs/worklist.md): reading it with its work state, changing the
 * state, claiming, releasing, and `next`. Each change is one conditional write of the row store's
 * work protocol (work.write.ts): the condition is read where it is written, so concurrent callers
 * never both win, on one instance or several.
 */

/** A row with its work state, and the ETag of that state. */
export interface WorkedRow {
  row: Row & { _work: WorkStateDto }
  etag: string
}

/** `GET {rows}/{rowId}`: the row as the path shows it, with `_work`. */
export async function getRow(ctx: ServiceContext, path: RowsPath, rowId: number): Promise<WorkedRow> {
  const access = await openRows(ctx, path)
  const record = await findRow(ctx, access, rowId)
  noteRead(ctx, access, rowId)
  return worked(access, record, await workState(ctx, rowId))
}

/** `PATCH {rows}/{rowId}/work`, optionally only while the state is at version `ifMatch`. */
export async function patchWork(
  ctx: ServiceContext,
  path: RowsPath,
  rowId: number,
  patch: WorkPatchInput,
  ifMatch: number | undefined,
): Promise<WorkedRow> {
  const access = await openRows(ctx, path)
  const record = await findRow(ctx, access, rowId)
  requireRowPermission(access, 'edit', 'change the work state of its rows')
  const now = isoNow(ctx.clock)
  const workflow = workflowOf(access.panel.workflow)
  const issues: { path: string; message: string }[] = []
  if (patch.status !== undefined && !workflow.statuses.some((s) => s.value === patch.status)) {
    issues.push({
      path: 'status',
      message: `unknown status "${patch.status}" (one of ${workflow.statuses.map((s) => s.value).join(', ')})`,
    })
  }
  const snoozedUntil = instant(patch.snoozedUntil)
  if (snoozedUntil && snoozedUntil <= now) issues.push({ path: 'snoozedUntil', message: 'must be in the future' })
  if (issues.length > 0) throw invalid(issues, issues.map((i) => `${i.path}: ${i.message}`).join('; '))
  const current = await workState(ctx, rowId)
  if (ifMatch !== undefined && ifMatch !== current.version) {
    throw preconditionFailed(`The row's work state is at version ${current.version}, not ${ifMatch}`, current)
  }
  if (patch.assignee !== undefined && !isManager(access)) requireOwnAssignment(ctx, current, patch.assignee, now)
  const set: SQL[] = []
  if (patch.status !== undefined && patch.status !== current.status) set.push(sql`status = ${patch.status}`)
  if (patch.dueAt !== undefined && instant(patch.dueAt) !== current.dueAt) set.push(sql`due_at = ${instant(patch.dueAt)}`)
  if (patch.snoozedUntil !== undefined && snoozedUntil !== current.snoozedUntil) set.push(sql`snoozed_until = ${snoozedUntil}`)
  if (patch.assignee !== undefined && patch.assignee !== current.assignee) {
    // Assigned by hand: held until released; unassigned: no claim.
    set.push(sql`assignee = ${patch.assignee}, claimed_at = ${patch.assignee === null ? null : now}, claim_expires_at = NULL`)
  }
  if (set.length === 0) {
    noteRead(ctx, access, rowId)
    return worked(access, record, current)
  }
  // The status must still be one of the workflow's as it is written (a workflow change may race).
  const statusHolds = patch.status === undefined ? sql`1` : sql`${patch.status} IN (${statusesSql(sql`${access.panel.id}`)})`
  const changed = await applyWork(ctx, {
    panelId: access.panel.id,
    membership: access.membership,
    pick: sql`SELECT id FROM row_identities WHERE id = ${rowId} AND version = ${current.version} AND ${statusHolds}`,
    set: sql.join(set, sql`, `),
    cause: 'patch',
    at: now,
  })
  if (changed.length === 0) {
    const latest = await workState(ctx, rowId)
    throw preconditionFailed('The row’s work state changed meanwhile; read it again', latest)
  }
  noteRead(ctx, access, rowId)
  return worked(access, record, changed[0])
}

/** `POST {rows}/{rowId}/claim`: the caller takes the row unless someone else holds it unexpired (409 naming them). */
export async function claimRow(ctx: ServiceContext, path: RowsPath, rowId: number, leaseSeconds?: number): Promise<WorkedRow> {
  const access = await openRows(ctx, path)
  const record = await findRow(ctx, access, rowId)
  requireRowPermission(access, 'edit', 'claim its rows')
  const now = ctx.clock.now()
  const at = now.toISOString()
  const me = ctx.scope.userId
  const lease = leaseSeconds ?? access.panel.workflow?.claimLeaseSeconds ?? null
  const expires = lease === null ? null : new Date(now.getTime() + lease * 1000).toISOString()
  const changed = await applyWork(ctx, {
    panelId: access.panel.id,
    membership: access.membership,
    // One conditional write: taken only where nobody else holds it unexpired.
    pick: sql`SELECT id FROM row_identities WHERE id = ${rowId}
      AND (assignee IS NULL OR assignee = ${me} OR (claim_expires_at IS NOT NULL AND claim_expires_at <= ${at}))`,
    set: sql`assignee = ${me}, claimed_at = ${at}, claim_expires_at = ${expires}`,
    cause: 'claim',
    at,
  })
  if (changed.length === 0) {
    const holder = await workState(ctx, rowId)
    throw conflict(`Row ${rowId} is claimed by ${holder.assignee}`, {
      assignee: holder.assignee,
      claimExpiresAt: holder.claimExpiresAt,
    })
  }
  noteRead(ctx, access, rowId)
  return worked(access, record, changed[0])
}

/** `POST {rows}/{rowId}/release`: the holder or a manager frees the row; anyone else gets 403. */
export async function releaseRow(ctx: ServiceContext, path: RowsPath, rowId: number): Promise<WorkedRow> {
  const access = await openRows(ctx, path)
  const record = await findRow(ctx, access, rowId)
  requireRowPermission(access, 'edit', 'release its rows')
  const at = isoNow(ctx.clock)
  const me = ctx.scope.userId
  const manager = isManager(access)
  const changed = await applyWork(ctx, {
    panelId: access.panel.id,
    membership: access.membership,
    pick: sql`SELECT id FROM row_identities WHERE id = ${rowId} AND assignee IS NOT NULL
      AND (${manager ? sql`1` : sql`assignee = ${me}`} OR (claim_expires_at IS NOT NULL AND claim_expires_at <= ${at}))`,
    set: sql`assignee = NULL, claimed_at = NULL, claim_expires_at = NULL`,
    cause: 'release',
    at,
  })
  if (changed.length > 0) {
    noteRead(ctx, access, rowId)
    return worked(access, record, changed[0])
  }
  const current = await workState(ctx, rowId)
  if (current.assignee === null) {
    noteRead(ctx, access, rowId)
    return worked(access, record, current)
  }
  throw permissionDenied('manage', `release row ${rowId}, held by ${current.assignee}`)
}

/**
 * `POST /api/views/{id}/next`: claims the first row in the view's order that nobody holds, that
 * is not done and not snoozed — chosen and taken in one conditional write, so concurrent callers
 * never get the same row. Undefined when none is left (204).
 */
export async function nextRow(ctx: ServiceContext, viewId: number, leaseSeconds?: number): Promise<WorkedRow | undefined> {
  const access = await openRows(ctx, { viewId })
  requireRowPermission(access, 'edit', 'claim its rows (next)')
  const now = ctx.clock.now()
  const at = now.toISOString()
  const clock = workClock(access.panel.workflow, at)
  const lease = leaseSeconds ?? access.panel.workflow?.claimLeaseSeconds ?? null
  const expires = lease === null ? null : new Date(now.getTime() + lease * 1000).toISOString()
  const q = access.rows
  const changed = await applyWork(ctx, {
    panelId: access.panel.id,
    membership: access.membership,
    pick: sql`SELECT r.row_id ${q.scope} AND ${free(clock)} ORDER BY ${q.order} LIMIT 1`,
    set: sql`assignee = ${ctx.scope.userId}, claimed_at = ${at}, claim_expires_at = ${expires}`,
    cause: 'next',
    at,
  })
  if (changed.length === 0) {
    noteRead(ctx, access)
    return undefined
  }
  const record = await findRow(ctx, access, changed[0].rowId)
  noteRead(ctx, access, changed[0].rowId)
  return worked(access, record, changed[0])
}

/** The work state of an identity (the caller has found its row). */
export async function workState(ctx: ServiceContext, rowId: number): Promise<WorkStateDto> {
  const [row] = await ctx.db.all<{ work: string }>(
    sql`SELECT ${workStateJson('i')} AS work FROM row_identities i WHERE i.id = ${rowId} AND i.tenant_id = ${ctx.scope.tenantId}`,
  )
  if (!row) throw notFound('Row', rowId, ctx.scope.tenantId)
  return JSON.parse(row.work) as WorkStateDto
}

/** The ETag of a work state. */
export const etagOf = (work: Pick<WorkStateDto, 'version'>) => `"${work.version}"`

// --- Internal helpers ---

function worked(access: RowsAccess, record: RecordRow, state: WorkStateDto & { rowId?: number }): WorkedRow {
  // The state as WorkState has it (a change's answer also names its row); the row as the path
  // shows it, its work copy the state just read or written.
  const { rowId: _, ...stored } = state
  // An expired claim holds nothing from the moment it expires (the scheduler step frees it later).
  const expired = stored.claimExpiresAt !== null && stored.claimExpiresAt <= access.now
  const work = expired ? { ...stored, assignee: null, claimedAt: null, claimExpiresAt: null } : stored
  const row = toRow({ ...record, work: JSON.stringify(work) }, access.rows.visible)
  return { row: { ...row, _work: work }, etag: etagOf(work) }
}

/**
 * Without `manage` a caller may set `assignee` only to themselves while nobody else holds the row
 * unexpired, or to null while they hold it (or nobody does); anything else is a 403 naming `manage`.
 */
function requireOwnAssignment(ctx: ServiceContext, current: WorkStateDto, assignee: string | null, now: string) {
  const me = ctx.scope.userId
  const heldByOther =
    current.assignee !== null && current.assignee !== me && (current.claimExpiresAt === null || current.claimExpiresAt > now)
  if (heldByOther) throw permissionDenied('manage', `take row from ${current.assignee}, who holds it`)
  if (assignee !== null && assignee !== me) throw permissionDenied('manage', 'assign a row to someone else')
}

/** The read audit (docs/audit.md): the row answered (its `_id`), or none (`next` with nothing left). */
function noteRead(ctx: ServiceContext, access: RowsAccess, rowId?: number) {
  const read = rowId === undefined ? { rowCount: 0 } : { rowCount: 1, rowId }
  noteAccess(ctx, { panelId: access.panel.id, viewId: access.view?.row.id, ...read })
}

/** An instant as stored: UTC with milliseconds. */
const instant = (value: string | null | undefined): string | null | undefined =>
  value === undefined || value === null ? value : new Date(value).toISOString()

/** Nobody holds the row unexpired, it is not done and not snoozed (virtual columns at `clock`). */
function free(clock: WorkClock): SQL {
  const v = (name: string) => cell(virtualColumn(name, clock) as NonNullable<ReturnType<typeof virtualColumn>>)
  return sql`${v('_assignee')} IS NULL AND ${v('_snoozed')} = 0
    AND ${v('_status')} NOT IN (SELECT value FROM json_each(${JSON.stringify(clock.done)}))`
}
