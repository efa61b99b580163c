import { and, eq, isNull, lt, or } from 'drizzle-orm'
import type { ServiceDeps } from '../../context.ts'
import { dataSources, type ExportCursor, type ExportViewState, viewDefinitionExports } from '../../db/schema.ts'
import { type Row, rowsOf, type ViewPlan, ViewRunError } from '../../engine/sof/index.ts'
import { AppError } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { noFileStoreMessage } from '../../lib/files.ts'
import { textLines } from '../../lib/formats/lines.ts'
import { inputPath, partPath, removeExportFiles } from './viewdefinitions.export-files.ts'
import { ofPatient, sourceRecords } from './viewdefinitions.input.ts'
import { rowWriter } from './viewdefinitions.output.ts'
import { compileOrRefuse, runRefusal } from './viewdefinitions.service.ts'

/**
 * The runner of an export job (docs/fhir.md "ViewDefinition export"). One call is a *slice*: it
 * takes the job's lease, then writes part files of at most `partResources` input resources each,
 * view after view, recording after each part where the input stands (the view, the last key read of
 * a source, or the count of inline resources read), until the job is done or `budgetMs` has passed.
 * Every part's record renews the lease; a slice that ran out of time releases it for the next one
 * (chained at once on Node and Deno; on Workers the next cron tick or status poll starts it). A
 * cancel (the status URL's DELETE) is seen when the part's record finds the job no longer running:
 * the runner then removes the job's files and the job. The service stopping (Node, Deno) ends the
 * slice after its current part, as a run out of time.
 */

export type ExportJob = typeof viewDefinitionExports.$inferSelect

export interface SliceOptions {
  /** Wall time a slice writes parts for (the last part may run past it by its own length). */
  budgetMs?: number
  /** Input resources per part file. */
  partResources?: number
}

export type SliceOutcome = 'completed' | 'failed' | 'more' | 'busy' | 'gone'

/** How long a slice's lease holds without a part recorded. */
export const EXPORT_LEASE_MS = 2 * 60 * 1000
/** A Worker's `waitUntil` runs about 30 s after the response: a slice stays well inside it. */
const SLICE_MS = 15_000
const PART_RESOURCES = 50_000
/** The limit the file storage applies to one part (each holds at most PART_RESOURCES resources' rows). */
const PART_MAX_BYTES = 8 * 1024 ** 3
/** Text gathered before it is handed to the file storage. */
const CHUNK_CHARS = 64 * 1024

/** Runs one slice of job `id`; `busy` when another runner holds it, `gone` when it was cancelled. */
export async function runExportSlice(deps: ServiceDeps, id: string, options: SliceOptions = {}): Promise<SliceOutcome> {
  const lease = crypto.randomUUID()
  const now = isoNow(deps.clock)
  const [job] = await deps.db
    .update(viewDefinitionExports)
    .set({ leaseId: lease, leaseExpiresAt: leaseExpiry(deps) })
    .where(
      and(
        eq(viewDefinitionExports.id, id),
        eq(viewDefinitionExports.status, 'running'),
        or(isNull(viewDefinitionExports.leaseId), lt(viewDefinitionExports.leaseExpiresAt, now)),
      ),
    )
    .returning()
  if (!job) return 'busy'
  const runner = new SliceRunner(deps, job, lease, options)
  try {
    return await runner.run()
  } catch (err) {
    return runner.fail(err)
  }
}

// --- Internal helpers ---

type Input = AsyncGenerator<{ key?: string; resource: unknown }>

class SliceRunner {
  private readonly views: ExportViewState[]
  private cursor: ExportCursor
  private readonly deadline: number
  private readonly partResources: number
  private wrote = false

  constructor(
    private readonly deps: ServiceDeps,
    private readonly job: ExportJob,
    private readonly lease: string,
    options: SliceOptions,
  ) {
    this.views = job.views.map((v) => ({ ...v }))
    this.cursor = { ...job.cursor }
    this.deadline = Date.now() + (options.budgetMs ?? SLICE_MS)
    this.partResources = options.partResources ?? PART_RESOURCES
  }

  async run(): Promise<SliceOutcome> {
    const files = this.deps.files
    if (!files) throw new Error(noFileStoreMessage(this.deps.runtime, '$viewdefinition-export'))
    const { params } = this.job
    while (this.cursor.view < this.views.length) {
      const v = this.cursor.view
      const view = this.views[v]
      const plan = await compileOrRefuse(view.definition)
      const input = this.openInput(plan)
      const writer = rowWriter(plan, params.format, params.header)
      try {
        for (;;) {
          // Every slice writes at least one part, so each makes progress however short its time.
          if (this.wrote && this.outOfTime()) return this.release()
          const part = { read: 0, rows: 0, after: this.cursor.after, ended: false }
          const body = partStream(input, plan, writer, view.parts === 0, params.patients, this.partResources, part)
          await files.write(partPath(this.job.id, v, view.parts, params.format), body, { maxBytes: PART_MAX_BYTES })
          view.parts++
          view.rows += part.rows
          const done = this.cursor.done + part.read
          this.cursor = part.ended
            ? { view: v + 1, read: 0, done }
            : { view: v, after: part.after, read: this.cursor.read + part.read, done }
          if (!(await this.record())) return this.lost()
          this.wrote = true
          if (part.ended) break
        }
      } finally {
        await input.return(undefined)
      }
    }
    return this.complete()
  }

  /** The job failed: recorded with its error (its files removed); a cancelled job is removed instead. */
  async fail(err: unknown): Promise<SliceOutcome> {
    const known = err instanceof ViewRunError ? runRefusal(err) : err
    const error =
      known instanceof AppError
        ? { code: known.code, message: known.message, details: known.details }
        : { code: 'INTERNAL_ERROR', message: `The export failed: ${(err as Error)?.message ?? String(err)}`, details: null }
    this.deps.log.warn('$viewdefinition-export failed', { exportId: this.job.id, error: error.message })
    await removeExportFiles(this.deps.files, this.job.id, this.views, this.job.params.format)
    const ended = await this.end({ status: 'failed', error: JSON.stringify(error) })
    return ended ? 'failed' : this.lost()
  }

  private outOfTime() {
    return Date.now() >= this.deadline || this.deps.stopping?.aborted === true
  }

  /** The input of the current view from the cursor: the source's records after its key, or the inline resources after those read. */
  private openInput(plan: ViewPlan): Input {
    const { params, id } = this.job
    const files = this.deps.files!
    const cursor = this.cursor
    if (params.source) {
      const patientRefs = params.patients?.length ? ['subject', 'patient'] : []
      const elements = plan.elements ? [...plan.elements, ...patientRefs] : undefined
      return sourceRecords(this.deps, params.source, { since: params.since, elements, after: cursor.after })
    }
    if (!params.inline) return (async function* () {})()
    return (async function* () {
      let skip = cursor.read
      for await (const { line } of textLines(await files.read(inputPath(id)))) {
        if (skip > 0) {
          skip--
          continue
        }
        yield { resource: JSON.parse(line) as unknown }
      }
    })()
  }

  /**
   * Records the views and the cursor, renewing the lease, while the job runs under this lease and
   * its source still has the generation the export reads; false when the job was cancelled or taken.
   */
  private async record(): Promise<boolean> {
    await this.checkSource()
    const [saved] = await this.deps.db
      .update(viewDefinitionExports)
      .set({ views: this.views, cursor: this.cursor, leaseExpiresAt: leaseExpiry(this.deps) })
      .where(this.held())
      .returning({ id: viewDefinitionExports.id })
    return saved !== undefined
  }

  /** A source synchronised again (a new generation) or deleted during the export fails it. */
  private async checkSource() {
    const source = this.job.params.source
    if (!source) return
    const [row] = await this.deps.db
      .select({ generation: dataSources.currentGeneration })
      .from(dataSources)
      .where(and(eq(dataSources.id, source.id), eq(dataSources.tenantId, this.job.tenantId)))
    if (row?.generation !== source.generation) {
      throw new AppError(
        'CONFLICT',
        `Data source ${source.id} was ${row ? 'synchronised again' : 'deleted'} during the export: start the export again`,
      )
    }
  }

  private async release(): Promise<SliceOutcome> {
    await this.deps.db.update(viewDefinitionExports).set({ leaseId: null, leaseExpiresAt: null }).where(this.held())
    return 'more'
  }

  private async complete(): Promise<SliceOutcome> {
    if (!(await this.end({ status: 'completed', error: null }))) return this.lost()
    if (this.job.params.inline) await this.deps.files?.remove(inputPath(this.job.id))
    return 'completed'
  }

  /** Ends the job (completed or failed), kept until EXPORT_TTL_HOURS from now; false when no longer held. */
  private async end(set: { status: 'completed' | 'failed'; error: string | null }): Promise<boolean> {
    const now = this.deps.clock.now()
    const expiresAt = new Date(now.getTime() + this.deps.config.exportTtlHours * 3600_000).toISOString()
    const [ended] = await this.deps.db
      .update(viewDefinitionExports)
      .set({
        ...set,
        views: this.views,
        cursor: this.cursor,
        finishedAt: now.toISOString(),
        expiresAt,
        leaseId: null,
        leaseExpiresAt: null,
      })
      .where(this.held())
      .returning({ id: viewDefinitionExports.id })
    return ended !== undefined
  }

  /**
   * The job is no longer this slice's: cancelled (or removed) → its files and row go now; taken
   * by another runner after this lease ran out → left to that runner.
   */
  private async lost(): Promise<SliceOutcome> {
    const [now] = await this.deps.db
      .select({ status: viewDefinitionExports.status, leaseId: viewDefinitionExports.leaseId })
      .from(viewDefinitionExports)
      .where(eq(viewDefinitionExports.id, this.job.id))
    if (now && now.status === 'running') return 'busy'
    await removeExportFiles(this.deps.files, this.job.id, this.views, this.job.params.format)
    await this.deps.db.delete(viewDefinitionExports).where(eq(viewDefinitionExports.id, this.job.id))
    return 'gone'
  }

  private held() {
    return and(
      eq(viewDefinitionExports.id, this.job.id),
      eq(viewDefinitionExports.leaseId, this.lease),
      eq(viewDefinitionExports.status, 'running'),
    )
  }
}

const leaseExpiry = (deps: ServiceDeps) => new Date(deps.clock.now().getTime() + EXPORT_LEASE_MS).toISOString()

/**
 * One part's bytes, pulled as the file storage writes them: rows of up to `limit` input resources
 * (the CSV header first in a view's first part), in chunks of about CHUNK_CHARS. `part` learns
 * what was read: resources, rows, the last key, whether the input ended.
 */
function partStream(
  input: Input,
  plan: ViewPlan,
  writer: ReturnType<typeof rowWriter>,
  first: boolean,
  patients: string[] | undefined,
  limit: number,
  part: { read: number; rows: number; after?: string; ended: boolean },
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let text = first ? writer.start() : ''
  let finished = false
  const keep = (resource: unknown) => !patients?.length || patients.some((p) => ofPatient(resource, p))
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (finished) return controller.close()
      while (text.length < CHUNK_CHARS) {
        if (part.read >= limit) {
          finished = true
          break
        }
        const next = await input.next()
        if (next.done) {
          part.ended = true
          finished = true
          text += writer.end()
          break
        }
        part.read++
        if (next.value.key !== undefined) part.after = next.value.key
        if (!keep(next.value.resource)) continue
        const rows: Row[] = rowsOf(plan, next.value.resource)
        for (const row of rows) text += writer.row(row, part.rows++ === 0 && first)
      }
      if (text.length > 0) controller.enqueue(encoder.encode(text))
      text = ''
      if (finished) controller.close()
    },
  })
}
