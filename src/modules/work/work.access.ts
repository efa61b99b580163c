import { sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import type { CohortRule, Workflow } from '../../db/schema.ts'
import { forbidden, notFound, permissionDenied } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import {
  columnsOfRecords,
  compileMembership,
  membershipJsonColumns,
  membershipRecordsOf,
  type PanelMembership,
} from '../../rowstore/membership-plan.ts'
import { type PreparedRows, prepareRows } from '../../rowstore/query/prepare.ts'
import { type RecordRow, recordColumns } from '../../rowstore/query/row-shape.ts'
import { loadWorkflow } from '../../rowstore/workflow.ts'
import { requirePanel } from '../panels/panels.service.ts'
import type { ViewPermission } from '../views/views.access.ts'
import { rowLimitsFor } from '../views/views.rows-scope.ts'
import { type LoadedView, loadVisibleView, requireViewPermission } from '../views/views.service.ts'

/**
 * Who may do what with a row (WORKLIST.md §3, docs/worklist.md "Who may do what"). A row is
 * addressed under its panel (the owner, a tenant admin) or under a view (its readers, by the
 * view's sharing rules); either way it must be one of the rows that path answers, else 404 — a
 * row the caller cannot read is never admitted to exist.
 */

/** Rows of a panel or of a view, as the caller reaches them. */
export type RowsPath = { panelId: number } | { viewId: number }

export interface RowsAccess {
  panel: { id: number; userId: string; workflow: Workflow | null; enableComments: boolean }
  view?: LoadedView
  /** The panel's owner or a tenant admin: everything. */
  full: boolean
  /** What the view's sharing gives (every permission when `full`). */
  permissions: ReadonlySet<ViewPermission>
  /** The path's row query (what GET …/rows answers). */
  rows: PreparedRows
  /** When the rows were opened: an expired claim reads as free from then on. */
  now: string
  /**
   * The panel's views compiled for a write's membership step at the write's time, from what opening
   * the rows read (none: the write reads them itself).
   */
  membership?: (at: string) => Promise<PanelMembership>
}

/** Opens a panel's or a view's rows for the caller; 404 for what they cannot see. */
export async function openRows(ctx: ServiceContext, path: RowsPath): Promise<RowsAccess> {
  if ('panelId' in path) {
    const panel = await requirePanel(ctx, path.panelId)
    const workflow = await loadWorkflow(ctx, panel.id)
    const rows = await prepareRows(ctx, { panel: { id: panel.id, cohortRule: panel.cohortRule as CohortRule, workflow } })
    return { panel: panelOf(panel, workflow), full: true, permissions: ALL, rows, now: isoNow(ctx.clock) }
  }
  const view = await loadVisibleView(ctx, path.viewId)
  // As GET …/rows: a view seen without `read` shows no row (403 naming it, before any row is looked up).
  requireViewPermission(view, 'read', 'read its rows')
  // The view's panel whoever owns it, with its views and columns: what the row query and a write's
  // membership step need of the panel, in one read.
  const { tenantId } = ctx.scope
  const panelId = view.row.panelId
  const [record] = await ctx.db.all<PanelRecord & { views: string; columns: string }>(
    sql`SELECT p.id, p.user_id, p.metadata, p.workflow, p.cohort_rule, ${membershipJsonColumns(tenantId)}
      FROM panels p WHERE p.id = ${panelId} AND p.tenant_id = ${tenantId} AND p.deleted_at IS NULL`,
  )
  if (!record) throw notFound('Panel', panelId, tenantId)
  const { views: viewRows, columns: columnRows } = membershipRecordsOf(record)
  const owner = panelOf(
    { id: Number(record.id), userId: record.user_id, metadata: record.metadata ? JSON.parse(record.metadata) : null },
    record.workflow ? (JSON.parse(record.workflow) as Workflow) : null,
  )
  const cohortRule = JSON.parse(record.cohort_rule) as CohortRule
  const columns = columnsOfRecords(columnRows)
  const full = ctx.scope.isAdmin || owner.userId === ctx.scope.userId
  const limits = full ? undefined : await rowLimitsFor(ctx, view, 0, columns)
  // The view's row query as GET …/rows builds it (views.query.ts), with the panel read here.
  const rows = await prepareRows(ctx, {
    panel: { id: owner.id, cohortRule, workflow: owner.workflow },
    columns,
    view: view.row,
    limits,
  })
  const permissions = full ? ALL : await sharedPermissions(ctx, view)
  const membership = (at: string) =>
    compileMembership(
      ctx.db,
      { tenantId, panelId, panel: record, views: viewRows, columns: columnRows, panelColumns: columns },
      { at },
    )
  return { panel: owner, view, full, permissions, rows, now: isoNow(ctx.clock), membership }
}

/** Fails with 403 naming the permission unless the caller holds it. */
export function requireRowPermission(access: RowsAccess, permission: ViewPermission, doing: string): void {
  if (!access.full && !access.permissions.has(permission)) throw permissionDenied(permission, doing)
}

/** May assign anyone and release anyone's claim. */
export const isManager = (access: RowsAccess) => access.full || access.permissions.has('manage')

/** The row `rowId` as the path answers it (its record with cells and work copy), or 404. */
export async function findRow(ctx: ServiceContext, access: RowsAccess, rowId: number): Promise<RecordRow> {
  const [row] = await ctx.db.all<RecordRow>(
    sql`SELECT ${sql.raw(recordColumns('r'))} ${access.rows.scope} AND r.row_id = ${rowId} LIMIT 1`,
  )
  if (!row) throw notFound('Row', rowId, ctx.scope.tenantId)
  return row
}

// --- Internal helpers ---

const ALL: ReadonlySet<ViewPermission> = new Set(['read', 'edit', 'create', 'delete', 'manage'])

function panelOf(panel: { id: number; userId: string; metadata?: Record<string, unknown> | null }, workflow: Workflow | null) {
  const settings = (panel.metadata?.settings ?? {}) as { enableComments?: unknown }
  return { id: panel.id, userId: panel.userId, workflow, enableComments: settings.enableComments !== false }
}

/** The view's panel as opening its rows reads it. */
type PanelRecord = { id: number; user_id: string; metadata: string | null; workflow: string | null; cohort_rule: string }

/** Copies of copies are followed this deep (as views.rows-scope.ts does for their rows). */
const MAX_COPY_DEPTH = 5

/**
 * What a reader who does not own the panel may do with its rows: what the view's sharing gives
 * them, and for a copy (made with `create`) no more than the view it was copied from gives them
 * too — every step of a chain of copies, so a copy published again never widens its source.
 */
async function sharedPermissions(ctx: ServiceContext, view: LoadedView, depth = 0): Promise<ReadonlySet<ViewPermission>> {
  if (view.row.sourceViewId === null) return view.access.permissions
  if (depth >= MAX_COPY_DEPTH) throw forbidden(`View ${view.row.id} is a copy of a copy more than ${MAX_COPY_DEPTH} deep`)
  const above = await sharedPermissions(ctx, await loadVisibleView(ctx, view.row.sourceViewId), depth + 1)
  return new Set([...view.access.permissions].filter((p) => above.has(p)))
}
