import { and, count, desc, eq } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { viewDefinitions } from '../../db/schema.ts'
import { prepareView, ViewDefinitionError, type ViewPlan, type ViewRunError } from '../../engine/sof/index.ts'
import { AppError, invalidViewDefinition, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { toViewDefinitionDto, type ViewDefinitionRow } from './viewdefinitions.schemas.ts'

/**
 * Stored ViewDefinitions (SQL-ON-FHIR.md, "Stored ViewDefinitions"): tenant-scoped, owned by their
 * creator (another tenant's or user's is a 404, CONTRACT: Ownership), validated by the engine on
 * every save so an invalid view is never stored.
 */

export interface ListFilter {
  name?: string
  resource?: string
}

/** The caller's views, newest change first, with their count. */
export async function listViewDefinitions(ctx: ServiceContext, filter: ListFilter) {
  const where = and(
    eq(viewDefinitions.tenantId, ctx.scope.tenantId),
    eq(viewDefinitions.userId, ctx.scope.userId),
    filter.name === undefined ? undefined : eq(viewDefinitions.name, filter.name),
    filter.resource === undefined ? undefined : eq(viewDefinitions.resource, filter.resource),
  )
  const [rows, [{ total }]] = await Promise.all([
    ctx.db.select().from(viewDefinitions).where(where).orderBy(desc(viewDefinitions.updatedAt), desc(viewDefinitions.id)),
    ctx.db.select({ total: count() }).from(viewDefinitions).where(where),
  ])
  return { views: rows.map(toViewDefinitionDto), total }
}

/** The caller's stored view, or a 404 naming it. */
export async function requireViewDefinition(ctx: ServiceContext, id: number): Promise<ViewDefinitionRow> {
  const [row] = await ctx.db
    .select()
    .from(viewDefinitions)
    .where(
      and(
        eq(viewDefinitions.id, id),
        eq(viewDefinitions.tenantId, ctx.scope.tenantId),
        eq(viewDefinitions.userId, ctx.scope.userId),
      ),
    )
    .limit(1)
  if (!row) throw notFound('ViewDefinition', id, ctx.scope.tenantId)
  return row
}

export async function createViewDefinition(ctx: ServiceContext, body: Record<string, unknown>) {
  const definition = await checkedDefinition(body)
  const now = isoNow(ctx.clock)
  const [row] = await ctx.db
    .insert(viewDefinitions)
    .values({ tenantId: ctx.scope.tenantId, userId: ctx.scope.userId, ...columnsOf(definition), createdAt: now, updatedAt: now })
    .returning()
  return toViewDefinitionDto(row)
}

/** Replaces the view (PUT is a whole resource, as in FHIR); a body `id` other than the path's is a 400. */
export async function replaceViewDefinition(ctx: ServiceContext, id: number, body: Record<string, unknown>) {
  await requireViewDefinition(ctx, id)
  if (body.id !== undefined && String(body.id) !== String(id)) {
    throw new AppError('VALIDATION_ERROR', `The body's id ${String(body.id)} is not ${id}`, [
      { path: 'id', message: `must be ${id} or absent` },
    ])
  }
  const definition = await checkedDefinition(body)
  const [row] = await ctx.db
    .update(viewDefinitions)
    .set({ ...columnsOf(definition), updatedAt: isoNow(ctx.clock) })
    .where(and(eq(viewDefinitions.id, id), eq(viewDefinitions.tenantId, ctx.scope.tenantId)))
    .returning()
  return toViewDefinitionDto(row)
}

export async function deleteViewDefinition(ctx: ServiceContext, id: number): Promise<void> {
  await requireViewDefinition(ctx, id)
  await ctx.db.delete(viewDefinitions).where(and(eq(viewDefinitions.id, id), eq(viewDefinitions.tenantId, ctx.scope.tenantId)))
}

/** Compiles a view for a run or a save: 400 INVALID_VIEW_DEFINITION with every issue in `details`. */
export async function compileOrRefuse(definition: unknown, at = ''): Promise<ViewPlan> {
  try {
    return await prepareView(definition)
  } catch (err) {
    throw err instanceof ViewDefinitionError ? invalidViewDefinition(err.issues, at) : err
  }
}

/** A view that met data it cannot turn into rows: a 400 like an invalid view, naming the resource. */
export const runRefusal = (err: ViewRunError) =>
  new AppError('INVALID_VIEW_DEFINITION', `The ViewDefinition cannot be run: ${err.message}`, [
    { path: err.path, message: err.reason, resource: err.resourceKey },
  ])

// --- Internal helpers ---

/** The definition as stored: checked by the engine, without the row's own `id` and `meta`. */
async function checkedDefinition(body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { id: _id, meta: _meta, ...definition } = body
  await compileOrRefuse({ ...definition, resourceType: definition.resourceType ?? 'ViewDefinition' })
  return { resourceType: 'ViewDefinition', ...definition }
}

const columnsOf = (definition: Record<string, unknown>) => ({
  definition,
  name: typeof definition.name === 'string' ? definition.name : null,
  resource: definition.resource as string,
})
