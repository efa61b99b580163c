import { and, eq, gt, inArray, isNull, lt, or } from 'drizzle-orm'
import type { ServiceContext, ServiceDeps } from '../../context.ts'
import { type ExportViewState, viewDefinitionExports } from '../../db/schema.ts'
import { AppError } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { noFileStoreMessage } from '../../lib/files.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { requireDataSource } from '../datasources/datasources.service.ts'
import { inputPath, removeExportFiles, viewFile } from './viewdefinitions.export-files.ts'
import { type ExportJob, runExportSlice, type SliceOptions } from './viewdefinitions.export-job.ts'
import { readExportParameters } from './viewdefinitions.export-parameters.ts'
import { countSourceRecords } from './viewdefinitions.input.ts'
import { RUN_CONTENT_TYPES } from './viewdefinitions.output.ts'
import type { RunParametersInput } from './viewdefinitions.schemas.ts'
import { compileOrRefuse, requireViewDefinition } from './viewdefinitions.service.ts'

/**
 * Async `$viewdefinition-export` (FHIR-EXCHANGE.md "Out 1"; SQL-on-FHIR v2; docs/fhir.md
 * "ViewDefinition export"): the kick-off checks the request whole (views compiled, the source
 * resolved, the inline input stored) and starts the job in the background; the status URL answers
 * its progress, then its manifest; its files are downloaded through the same token; its DELETE
 * cancels or removes it. A job belongs to its tenant and user: anyone else's is a 404, as is one
 * cancelled or past its expiry. The maintenance tick carries on jobs nobody runs and removes ended
 * ones after EXPORT_TTL_HOURS.
 */

export { type ExportJob, runExportSlice, type SliceOptions }

/** Starts an export; `request` is the kick-off's URL (the manifest's `request`). */
export async function startExport(
  ctx: ServiceContext,
  body: RunParametersInput,
  request: string,
  storedId?: number,
  slice?: SliceOptions,
): Promise<ExportJob> {
  const asked = readExportParameters(body, storedId)
  const files = ctx.files
  if (!files) throw new AppError('VALIDATION_ERROR', noFileStoreMessage(ctx.runtime, '$viewdefinition-export'))
  const views: ExportViewState[] = []
  for (const [i, view] of asked.views.entries()) {
    const definition = view.viewResource ?? (await requireViewDefinition(ctx, view.viewReference!)).definition
    const plan = await compileOrRefuse(definition, storedId === undefined ? `view[${i}]` : '')
    const name = view.name ?? (typeof definition.name === 'string' ? definition.name : `view_${i + 1}`)
    views.push({ name, resource: plan.resource, definition, parts: 0, rows: 0 })
  }
  let source: { id: number; generation: number; panelId: number } | undefined
  let total = asked.resources.length
  if (asked.source !== undefined) {
    const row = await requireDataSource(ctx, asked.source)
    source = { id: row.id, generation: row.currentGeneration, panelId: row.panelId }
    total = await countSourceRecords(ctx, source, asked.since)
  }
  const id = crypto.randomUUID()
  if (asked.hasResources) {
    const lines = new Blob(asked.resources.map((r) => `${JSON.stringify(r)}\n`))
    await files.write(inputPath(id), lines.stream(), { maxBytes: Number.MAX_SAFE_INTEGER, size: lines.size })
  }
  const [job] = await ctx.db
    .insert(viewDefinitionExports)
    .values({
      id,
      tenantId: ctx.scope.tenantId,
      userId: ctx.scope.userId,
      status: 'running',
      request,
      params: {
        format: asked.format,
        header: asked.header,
        source,
        inline: asked.hasResources,
        since: asked.since,
        patients: asked.patients.length ? asked.patients : undefined,
        clientTrackingId: asked.clientTrackingId,
        total,
      },
      views,
      cursor: { view: 0, read: 0, done: 0 },
      createdAt: isoNow(ctx.clock),
    })
    .returning()
  carryOn(ctx, job.id, slice)
  return job
}

/**
 * The caller's job as a poll sees it: a running one whose lease is free (a slice ran out of time on
 * Workers, or its runner died) is carried on in the background from here.
 */
export async function exportStatus(ctx: ServiceContext, id: string, slice?: SliceOptions): Promise<ExportJob> {
  const job = await requireExport(ctx, id)
  if (job.status === 'running' && (!job.leaseExpiresAt || job.leaseExpiresAt < isoNow(ctx.clock))) carryOn(ctx, id, slice)
  return job
}

/** A view's output file of a completed job (`index` in the manifest's order), streamed from its parts. */
export async function exportFile(ctx: ServiceContext, id: string, index: number, format: string) {
  const job = await requireExport(ctx, id)
  const view = job.views[index]
  if (job.status !== 'completed' || !view || job.params.format !== format) {
    throw new AppError('NOT_FOUND', `File ${index}.${format} of export ${id} not found`, null, 'File not found')
  }
  if (job.params.source)
    noteAccess(ctx, { dataSourceId: job.params.source.id, rowCount: view.rows, query: { export: id, file: index } })
  else noteAccess(ctx, { readsNothingStored: true })
  return {
    body: viewFile(ctx.files!, id, index, view.parts, format),
    contentType: RUN_CONTENT_TYPES[job.params.format],
    fileName: `${view.name}.${format}`,
  }
}

/**
 * DELETE of the status URL: a job some runner holds is marked cancelled (the runner removes it and
 * its files after its current part, or the tick once its lease ran out); any other is removed now.
 */
export async function deleteExport(ctx: ServiceContext, id: string): Promise<void> {
  const job = await requireExport(ctx, id)
  const now = isoNow(ctx.clock)
  if (job.status === 'running' && job.leaseExpiresAt && job.leaseExpiresAt >= now) {
    const [marked] = await ctx.db
      .update(viewDefinitionExports)
      .set({ status: 'cancelled' })
      .where(and(eq(viewDefinitionExports.id, id), eq(viewDefinitionExports.status, 'running')))
      .returning({ id: viewDefinitionExports.id })
    if (marked) return
  }
  await removeJob(ctx, job)
}

/** What the maintenance tick did to exports. */
export interface ExportTickReport {
  /** Slices run of jobs nobody was running. */
  resumed: number
  /** Jobs removed with their files: expired, or cancelled and left by their runner. */
  removed: number
}

/**
 * The maintenance tick's export step: removes jobs past their expiry and cancelled jobs whose
 * runner is gone (files first), at most `limit`; then runs a slice of each running job whose lease
 * is free, at most `limit`, one after another (a restart on Node, the next tick on Workers).
 */
export async function runExportMaintenance(deps: ServiceDeps, now: Date, limit = 10): Promise<ExportTickReport> {
  const at = now.toISOString()
  const report: ExportTickReport = { resumed: 0, removed: 0 }
  const leaseFree = or(isNull(viewDefinitionExports.leaseExpiresAt), lt(viewDefinitionExports.leaseExpiresAt, at))
  const stale = await deps.db
    .select()
    .from(viewDefinitionExports)
    .where(
      or(
        and(inArray(viewDefinitionExports.status, ['completed', 'failed']), lt(viewDefinitionExports.expiresAt, at)),
        and(eq(viewDefinitionExports.status, 'cancelled'), leaseFree),
      ),
    )
    .limit(limit)
  for (const job of stale) {
    await removeJob(deps, job)
    report.removed++
  }
  const due = await deps.db
    .select({ id: viewDefinitionExports.id })
    .from(viewDefinitionExports)
    .where(and(eq(viewDefinitionExports.status, 'running'), leaseFree))
    .orderBy(viewDefinitionExports.createdAt)
    .limit(limit)
  for (const { id } of due) {
    if (deps.stopping?.aborted) break
    const outcome = await runExportSlice(deps, id)
    if (outcome !== 'busy') report.resumed++
    // On Node and Deno the rest runs in the background, as after a kick-off; on Workers the next tick or poll goes on.
    if (outcome === 'more') carryOn(deps, id)
  }
  return report
}

/** The progress of a running job: the share of the input read over all its views. */
export function exportProgress(job: ExportJob): { percent: number; text: string } {
  const all = job.params.total * job.views.length
  const percent = all === 0 ? 0 : Math.min(99, Math.floor((job.cursor.done * 100) / all))
  const view = Math.min(job.cursor.view + 1, job.views.length)
  return {
    percent,
    text: `${percent}% (${job.cursor.done} of ${all} resources read; view ${view} of ${job.views.length})`,
  }
}

// --- Internal helpers ---

/** The caller's job, not cancelled and not past its expiry; else a 404. */
async function requireExport(ctx: ServiceContext, id: string): Promise<ExportJob> {
  const [job] = await ctx.db
    .select()
    .from(viewDefinitionExports)
    .where(
      and(
        eq(viewDefinitionExports.id, id),
        eq(viewDefinitionExports.tenantId, ctx.scope.tenantId),
        eq(viewDefinitionExports.userId, ctx.scope.userId),
        inArray(viewDefinitionExports.status, ['running', 'completed', 'failed']),
        or(isNull(viewDefinitionExports.expiresAt), gt(viewDefinitionExports.expiresAt, isoNow(ctx.clock))),
      ),
    )
    .limit(1)
  if (!job) throw new AppError('NOT_FOUND', `Export ${id} not found for tenant ${ctx.scope.tenantId}`, null, 'Export not found')
  return job
}

/** Removes a job's files, then the job. */
async function removeJob(deps: ServiceDeps, job: ExportJob) {
  await removeExportFiles(deps.files, job.id, job.views, job.params.format)
  await deps.db.delete(viewDefinitionExports).where(eq(viewDefinitionExports.id, job.id))
}

/** Runs slices in the background until the job ends (Node, Deno), or one slice (Workers). */
function carryOn(ctx: ServiceDeps, id: string, slice?: SliceOptions) {
  const work = async () => {
    for (;;) {
      const outcome = await runExportSlice(ctx, id, slice)
      if (outcome !== 'more' || ctx.stopping?.aborted) return
    }
  }
  // On Workers the request's waitUntil ends soon after a slice's time: one slice, and the next poll or tick goes on.
  const once = async () => {
    await runExportSlice(ctx, id, slice)
  }
  ctx.defer(ctx.runtime === 'workers' ? once() : work(), { what: '$viewdefinition-export', exportId: id })
}
