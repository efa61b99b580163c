import { and, asc, eq, type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { runBatch } from '../../db/client.ts'
import { type columns, dataSources, panels } from '../../db/schema.ts'
import { conflict, invalid, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { bumpColumnsVersion } from '../../rowstore/materialise.ts'
import { refreshRowIndex } from '../../rowstore/query/row-index.ts'
import { recomputeAfterColumnChange } from '../../rowstore/recompute.ts'
import { changeInsert } from '../changes/changes.service.ts'
import { panelColumns } from '../columns/columns.queries.ts'
import { dependantsConflict, dependantsOf } from '../columns/columns.rules.ts'
import { notifyViewOwners } from '../notifications/notifications.service.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { flatViewOf, resourcePaths, type ViewBaseColumn, viewBaseColumns } from './viewdefinitions.panel.columns.ts'
import type { PanelViewDefinitionInput } from './viewdefinitions.panel.schemas.ts'
import { viewReferenceId } from './viewdefinitions.parameters.ts'
import { compileOrRefuse, requireViewDefinition } from './viewdefinitions.service.ts'

/**
 * A panel defined by a ViewDefinition (docs/sql-on-fhir.md, "Panels defined by a ViewDefinition"):
 * its base columns are the view's columns and its rows the view's rows over its records
 * (src/rowstore/expand.ts stores them; every sync, webhook and recompute goes through it). Putting a view
 * is one change record and one recompute; putting the same view again changes nothing. Owner-checked
 * like every panel sub-resource: another tenant's or user's panel is a 404.
 */

type ColumnRow = typeof columns.$inferSelect

/** The panel's view: the one it is defined by, unchanged, else its base columns as a flat view. */
export async function getPanelViewDefinition(ctx: ServiceContext, panelId: number): Promise<Record<string, unknown>> {
  const panel = await requirePanel(ctx, panelId)
  const state = await viewState(ctx, panelId)
  if (state.definition) return state.definition
  const base = (await panelColumns(ctx, panelId)).filter((c) => c.columnType === 'base')
  return flatViewOf(panel.name, await resourceOf(ctx, panelId), base)
}

/**
 * Defines the panel by a view: its base columns become the view's (a base column of the same name
 * is taken over, keeping its id; other base columns go, refused with 409 while a calculated column
 * references one), and its rows are rebuilt from the records it holds. Answers the view.
 */
export async function putPanelViewDefinition(
  ctx: ServiceContext,
  panelId: number,
  input: PanelViewDefinitionInput,
): Promise<Record<string, unknown>> {
  const panel = await requirePanel(ctx, panelId)
  const definition = await requestedView(ctx, input)
  const plan = await compileOrRefuse(definition, input.viewResource ? 'viewResource' : '')
  const state = await viewState(ctx, panelId)
  const dataSourceId = input.dataSourceId === undefined ? state.dataSourceId : input.dataSourceId
  if (dataSourceId !== null) await requirePanelSource(ctx, panelId, dataSourceId)
  if (state.definition && sameJson(state.definition, definition) && state.dataSourceId === dataSourceId) return definition

  const existing = await panelColumns(ctx, panelId)
  const wanted = viewBaseColumns(definition, plan)
  const statements = columnStatements(ctx, panel.userId, panelId, existing, wanted)
  const now = isoNow(ctx.clock)
  const changes: Record<string, { oldValue?: unknown; newValue?: unknown }> = {
    viewDefinition: { oldValue: state.definition, newValue: definition },
    baseColumns: {
      oldValue: existing.filter((c) => c.columnType === 'base').map((c) => c.name),
      newValue: wanted.map((c) => c.name),
    },
  }
  if (dataSourceId !== state.dataSourceId) changes.viewDataSourceId = { oldValue: state.dataSourceId, newValue: dataSourceId }
  await runBatch(ctx.db, [
    ...statements.map((s) => ctx.db.run(s)),
    ctx.db.run(sql`UPDATE panels SET view_definition = ${JSON.stringify(definition)}, view_data_source_id = ${dataSourceId},
      updated_at = ${now} WHERE id = ${panelId} AND tenant_id = ${ctx.scope.tenantId}`),
    bumpColumnsVersion(ctx.db, ctx.scope.tenantId, panelId),
    changeInsert(ctx, { panelId, entityType: 'Panel', entityId: panelId, action: 'UPDATE', changes }),
    notifyViewOwners(ctx, {
      panelId,
      type: 'COLUMN_CHANGED',
      impact: 'warning',
      message: `The panel is now defined by the ViewDefinition ${String(definition.name ?? plan.resource)}`,
    }),
  ])
  await recomputeAfterColumnChange(ctx, panelId)
  await refreshRowIndex(ctx.db, ctx.scope.tenantId, panelId)
  return definition
}

/**
 * The panel is no longer defined by a view: one row per record again, the view's columns kept as
 * ordinary base columns reading the resource (their paths made absolute: `resourcePaths`).
 */
export async function deletePanelViewDefinition(ctx: ServiceContext, panelId: number): Promise<void> {
  await requirePanel(ctx, panelId)
  const state = await viewState(ctx, panelId)
  if (!state.definition) return
  const changes = {
    viewDefinition: { oldValue: state.definition, newValue: null },
    ...(state.dataSourceId === null ? {} : { viewDataSourceId: { oldValue: state.dataSourceId, newValue: null } }),
  }
  const paths = resourcePaths(state.definition)
  const now = isoNow(ctx.clock)
  const rewrites = (await panelColumns(ctx, panelId))
    .filter((c) => c.columnType === 'base' && paths.has(c.name) && c.fhirPath !== paths.get(c.name))
    .map((c) =>
      ctx.db.run(sql`UPDATE columns SET fhir_path = ${paths.get(c.name)}, source_field = ${paths.get(c.name)}, updated_at = ${now}
        WHERE id = ${c.id} AND tenant_id = ${ctx.scope.tenantId}`),
    )
  await runBatch(ctx.db, [
    ...rewrites,
    ctx.db.run(sql`UPDATE panels SET view_definition = NULL, view_data_source_id = NULL, updated_at = ${isoNow(ctx.clock)}
      WHERE id = ${panelId} AND tenant_id = ${ctx.scope.tenantId}`),
    bumpColumnsVersion(ctx.db, ctx.scope.tenantId, panelId),
    changeInsert(ctx, { panelId, entityType: 'Panel', entityId: panelId, action: 'UPDATE', changes }),
  ])
  await recomputeAfterColumnChange(ctx, panelId)
}

// --- Internal helpers ---

async function requestedView(ctx: ServiceContext, input: PanelViewDefinitionInput): Promise<Record<string, unknown>> {
  if (input.viewResource) return input.viewResource
  const id = viewReferenceId(input.viewReference?.reference)
  if (id === undefined) throw invalid([{ path: 'viewReference.reference', message: 'must be "ViewDefinition/<id>"' }])
  return (await requireViewDefinition(ctx, id)).definition
}

async function viewState(ctx: ServiceContext, panelId: number) {
  const [row] = await ctx.db
    .select({ definition: panels.viewDefinition, dataSourceId: panels.viewDataSourceId })
    .from(panels)
    .where(and(eq(panels.id, panelId), eq(panels.tenantId, ctx.scope.tenantId)))
  return { definition: row?.definition ?? null, dataSourceId: row?.dataSourceId ?? null }
}

/** A data source of this panel (of the caller's tenant), else a 404 naming it. */
async function requirePanelSource(ctx: ServiceContext, panelId: number, id: number) {
  const [found] = await ctx.db
    .select({ id: dataSources.id })
    .from(dataSources)
    .where(and(eq(dataSources.id, id), eq(dataSources.tenantId, ctx.scope.tenantId), eq(dataSources.panelId, panelId)))
  if (!found) throw notFound('Data source', id, ctx.scope.tenantId)
}

/**
 * The resource type of a flat view of the panel: the one its first FHIR source names, else that of
 * its first record (any source: a file, an API or a webhook may hold FHIR resources), else `Basic`.
 * A run of the view over the panel's source then reads the resources the panel shows.
 */
async function resourceOf(ctx: ServiceContext, panelId: number): Promise<string> {
  const sources = await ctx.db
    .select({ config: dataSources.config })
    .from(dataSources)
    .where(and(eq(dataSources.tenantId, ctx.scope.tenantId), eq(dataSources.panelId, panelId), eq(dataSources.type, 'fhir')))
    .orderBy(asc(dataSources.id))
  for (const { config } of sources) {
    const types = config.resourceType ?? (Array.isArray(config.resourceTypes) ? config.resourceTypes[0] : undefined)
    if (typeof types === 'string' && types !== '') return types
  }
  const [first] = await ctx.db.all<{ type: unknown }>(sql`
    SELECT r.data ->> '$.resourceType' AS type FROM records r INDEXED BY records_tenant_panel_idx
    JOIN data_sources s ON s.id = r.data_source_id AND s.tenant_id = ${ctx.scope.tenantId}
    WHERE r.tenant_id = ${ctx.scope.tenantId} AND r.panel_id = ${panelId} AND r.generation = s.current_generation
    ORDER BY r.id LIMIT 1`)
  return typeof first?.type === 'string' && RESOURCE_TYPE.test(first.type) ? first.type : 'Basic'
}

/** A FHIR resource type name. */
const RESOURCE_TYPE = /^[A-Z][A-Za-z]{1,63}$/

/**
 * The column writes that make the panel's base columns the view's: same-named base columns
 * updated where they differ (ids kept), new ones inserted, the others deleted.
 */
function columnStatements(
  ctx: ServiceContext,
  ownerId: string,
  panelId: number,
  existing: ColumnRow[],
  wanted: ViewBaseColumn[],
): SQL[] {
  const byName = new Map(existing.map((c) => [c.name, c]))
  const names = new Set(wanted.map((c) => c.name))
  const clash = wanted.filter((c) => byName.get(c.name)?.columnType === 'calculated').map((c) => c.name)
  if (clash.length > 0)
    throw conflict(`The view's columns ${clash.join(', ')} are calculated columns of the panel: rename them first`)
  const removed = existing.filter((c) => c.columnType === 'base' && !names.has(c.name))
  for (const column of removed) {
    const found = dependantsOf(existing, column.name)
    if (found.length > 0) throw dependantsConflict(column.name, found, 'the view must keep it, or change them first')
  }
  const now = isoNow(ctx.clock)
  const statements: SQL[] = removed.map((c) => sql`DELETE FROM columns WHERE id = ${c.id} AND tenant_id = ${ctx.scope.tenantId}`)
  for (const column of wanted) {
    const before = byName.get(column.name)
    const { collection: _drop, ...kept } = before?.properties ?? {}
    const properties = JSON.stringify(column.collection ? { ...kept, collection: true } : kept)
    if (!before) {
      statements.push(sql`
        INSERT INTO columns (tenant_id, user_id, panel_id, column_type, name, type, source_field, fhir_path, read_by,
                             data_source_id, properties, metadata, created_at, updated_at)
        VALUES (${ctx.scope.tenantId}, ${ownerId}, ${panelId}, 'base', ${column.name}, ${column.type}, ${column.path},
                ${column.path}, 'fhirPath', NULL, ${properties}, '{}', ${now}, ${now})`)
      continue
    }
    const same =
      before.type === column.type &&
      before.fhirPath === column.path &&
      before.sourceField === column.path &&
      before.readBy === 'fhirPath' &&
      before.dataSourceId === null &&
      JSON.stringify(before.properties) === properties
    if (same) continue
    statements.push(sql`
      UPDATE columns SET type = ${column.type}, source_field = ${column.path}, fhir_path = ${column.path}, read_by = 'fhirPath',
        data_source_id = NULL, properties = ${properties}, updated_at = ${now}
      WHERE id = ${before.id} AND tenant_id = ${ctx.scope.tenantId}`)
  }
  return statements
}

/** JSON equality regardless of key order. */
function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b)
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}
