import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { panels, views } from '../db/schema.ts'

/**
 * The one place a stored view becomes the view the API answers: `GET /api/views/{id}` (through the
 * views module's `toViewDto`) and the `view` of every `view.*` event of the change feed, including
 * the row store's own re-evaluations, so a consumer that keeps its copy of a view from the events
 * holds what GET answers (issue 20).
 */

export type StoredView = typeof views.$inferSelect

export interface ViewPayload {
  id: number
  name: string
  description: string
  panelId: number
  userId: string
  tenantId: string
  isPublished: boolean
  publishedAt: string | null
  publishedBy: string | null
  publishConfig: Record<string, unknown> | null
  sourceViewId: number | null
  config: Record<string, unknown>
  metadata: Record<string, unknown>
  filters: Record<string, unknown>[]
  sorting: Record<string, unknown>[]
  columnVisibility: Record<string, boolean>
  aggregations: Record<string, unknown>[]
  createdAt: string
  updatedAt: string
  accessedAt: string | null
  panel: { id: number; name: string }
}

/**
 * A view as the caller sees it. The password hash of a protected view is never answered; a user who
 * sees someone else's published view (`full: false`) sees its `publishedTitle` and `description`
 * (publishConfig) as its name and description when the publisher gave them. Events carry the view
 * as such a reader sees it.
 */
export function viewPayload(row: StoredView, panel: { id: number; name: string }, access?: { full: boolean }): ViewPayload {
  const { passwordHash: _hash, password: _password, ...publishConfig } = (row.publishConfig ?? {}) as Record<string, unknown>
  const shown = access && !access.full && row.isPublished
  const title = shown && typeof publishConfig.publishedTitle === 'string' ? publishConfig.publishedTitle : row.name
  const description = shown && typeof publishConfig.description === 'string' ? publishConfig.description : (row.description ?? '')
  return {
    id: row.id,
    name: title,
    description,
    panelId: row.panelId,
    userId: row.userId,
    tenantId: row.tenantId,
    isPublished: Boolean(row.isPublished),
    publishedAt: row.publishedAt ?? null,
    publishedBy: row.publishedBy ?? null,
    publishConfig: row.publishConfig ? publishConfig : null,
    sourceViewId: row.sourceViewId ?? null,
    config: row.config,
    metadata: row.metadata ?? {},
    filters: row.filters as unknown as Record<string, unknown>[],
    sorting: row.sorting as unknown as Record<string, unknown>[],
    columnVisibility: row.columnVisibility ?? {},
    aggregations: row.aggregations as unknown as Record<string, unknown>[],
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    accessedAt: row.accessedAt ?? null,
    panel: { id: panel.id, name: panel.name },
  }
}

/** The views of a live panel as an event carries them (a reader's view of each), by id. */
export async function loadViewPayloads(db: Db, tenantId: string, panelId: number): Promise<Map<number, ViewPayload>> {
  const rows = await db
    .select({ view: views, panel: { id: panels.id, name: panels.name } })
    .from(views)
    .innerJoin(panels, and(eq(panels.id, views.panelId), eq(panels.tenantId, tenantId), isNull(panels.deletedAt)))
    .where(and(eq(views.tenantId, tenantId), eq(views.panelId, panelId)))
  return new Map(rows.map((r) => [r.view.id, viewPayload(r.view, r.panel, { full: false })]))
}
