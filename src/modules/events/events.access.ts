import { and, eq, isNull } from 'drizzle-orm'
import type { Scope } from '../../context.ts'
import type { Db } from '../../db/client.ts'
import { panels, views } from '../../db/schema.ts'
import { type ViewSharing, viewAccess } from '../views/views.access.ts'

/**
 * Who may read which event of the change feed (LIVE.md "Reading the log"; docs/live.md "Who reads
 * what"). The view rules are views.access.ts's, applied to every view of the tenant at once:
 *
 * - tenant admins (`role: admin`) read every event of their tenant, as they read every panel and view;
 * - a view-scoped event (`viewId` set): readers of that view now — those who see it and hold its
 *   `read` permission; a password-protected view of someone else only on its own path with the
 *   password (X-View-Password), never in the tenant-wide feed; a copy bounded by its source view
 *   only while the source is readable (as its rows); an event of a view that no longer exists (its
 *   `view.deleted` among them): the owner of its panel;
 * - a panel-scoped event (`panelId` set, no `viewId`): the panel's owner;
 * - an event naming neither: admins only.
 */

/** A view as the rules read it. */
export interface CatalogueView extends ViewSharing {
  id: number
  panelId: number
  sourceViewId: number | null
}

/** The tenant's live panels (owner) and their views: what the rules need, loaded in one batch. */
export interface AccessCatalogue {
  views: Map<number, CatalogueView>
  panelOwners: Map<number, string>
}

/** What one caller may read, as sets the log's reads test against (in SQL or in memory). */
export interface Readable {
  all: boolean
  /** Views (existing) whose events the caller may read. */
  views: Set<number>
  /** Panels the caller owns (their panel-scoped events, and those of their deleted views). */
  panels: Set<number>
  /** Every existing view of the catalogue: an event of any other view is of a deleted view. */
  known: Set<number>
}

/** Copies of copies are followed this deep (as views.rows-scope.ts). */
const MAX_COPY_DEPTH = 5

export async function loadCatalogue(db: Db, tenantId: string): Promise<AccessCatalogue> {
  const live = and(eq(panels.tenantId, tenantId), isNull(panels.deletedAt))
  const [viewRows, panelRows] = await db.batch([
    db
      .select({
        id: views.id,
        panelId: views.panelId,
        userId: views.userId,
        isPublished: views.isPublished,
        publishConfig: views.publishConfig,
        sourceViewId: views.sourceViewId,
      })
      .from(views)
      .innerJoin(panels, and(eq(panels.id, views.panelId), live))
      .where(eq(views.tenantId, tenantId)),
    db.select({ id: panels.id, userId: panels.userId }).from(panels).where(live),
  ])
  return {
    views: new Map(
      viewRows.map((v) => [v.id, { ...v, isPublished: Boolean(v.isPublished), sourceViewId: v.sourceViewId ?? null }]),
    ),
    panelOwners: new Map(panelRows.map((p) => [p.id, p.userId])),
  }
}

/**
 * The caller's readable sets at `now`. `unlocked`: password-protected views whose password the
 * caller gave on this request.
 */
export function readableFor(cat: AccessCatalogue, scope: Scope, now: Date, unlocked: ReadonlySet<number> = new Set()): Readable {
  const known = new Set(cat.views.keys())
  if (scope.isAdmin) return { all: true, views: known, panels: new Set(cat.panelOwners.keys()), known }
  const owned = new Set<number>()
  for (const [id, owner] of cat.panelOwners) if (owner === scope.userId) owned.add(id)
  const decided = new Map<number, boolean>()
  const mayRead = (view: CatalogueView, depth: number): boolean => {
    const known = decided.get(view.id)
    if (known !== undefined) return known
    const access = viewAccess(view, scope, now)
    let ok = access.visible && access.permissions.has('read') && (!access.needsPassword || unlocked.has(view.id))
    if (ok && view.sourceViewId !== null && !owned.has(view.panelId)) {
      const source = cat.views.get(view.sourceViewId)
      ok = depth < MAX_COPY_DEPTH && source !== undefined && mayRead(source, depth + 1)
    }
    decided.set(view.id, ok)
    return ok
  }
  const readable = new Set<number>()
  for (const view of cat.views.values()) if (mayRead(view, 0)) readable.add(view.id)
  return { all: false, views: readable, panels: owned, known }
}

/** Whether the caller of `r` may read an event of this panel and view (the rules above, in memory). */
export function mayReadEvent(r: Readable, e: { panelId: number | null; viewId: number | null }): boolean {
  if (r.all) return true
  if (e.viewId !== null && r.known.has(e.viewId)) return r.views.has(e.viewId)
  return e.panelId !== null && r.panels.has(e.panelId)
}
