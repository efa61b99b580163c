import type { ServiceContext } from '../../context.ts'
import { type Row, rowsOf, ViewRunError } from '../../engine/sof/index.ts'
import { pushStream } from '../../http/push-stream.ts'
import { noteAccess, streamedAccess } from '../audit/audit.record.ts'
import { ofPatient, sourceResources } from './viewdefinitions.input.ts'
import { RUN_CONTENT_TYPES, rowWriter } from './viewdefinitions.output.ts'
import { type RunRequest, readRunParameters } from './viewdefinitions.parameters.ts'
import type { RunParametersInput } from './viewdefinitions.schemas.ts'
import { compileOrRefuse, requireViewDefinition, runRefusal } from './viewdefinitions.service.ts'

/**
 * `$viewdefinition-run` (SQL-ON-FHIR.md, "The operation"; docs/sql-on-fhir.md). The rows are
 * computed ahead of the answer up to HEAD_BYTES of output: a run that ends within it (every run of
 * inline resources the official tests make) is answered whole, so a row the view cannot produce
 * (a non-collection column with two values) is an ordinary 400. A longer run is streamed from
 * there, with backpressure; an error after that point can only cut the stream short, and is logged.
 * A run over a data source's records is a read of stored rows: it is audited (docs/audit.md) with
 * the source, its panel and the rows answered; a run over resources the request sent is not.
 */

/** Output computed before the answer starts. */
const HEAD_BYTES = 256 * 1024
/** Text gathered into one chunk of the stream. */
const CHUNK_BYTES = 64 * 1024

export interface RunAnswer {
  body: string | ReadableStream<Uint8Array>
  contentType: string
}

export async function runViewDefinition(ctx: ServiceContext, body: RunParametersInput, storedId?: number): Promise<RunAnswer> {
  const request = readRunParameters(body, storedId)
  const plan = await compileOrRefuse(await viewOf(ctx, request, storedId), request.viewResource ? 'viewResource' : '')
  let input: AsyncIterable<unknown> | Iterable<unknown> = request.resources
  if (request.source === undefined) noteAccess(ctx, { readsNothingStored: true })
  else {
    const { since, limit, patient, format } = request
    noteAccess(ctx, {
      query: { source: request.source, view: storedId ?? request.viewReference ?? 'inline', since, limit, patient, format },
    })
    // `patient` also reads the references ofPatient() follows.
    const elements = plan.elements && patient ? [...plan.elements, 'subject', 'patient'] : plan.elements
    input = await sourceResources(ctx, request.source, since, elements)
  }
  const writer = rowWriter(plan, request.format, request.header)
  const counted = { rows: 0 }
  const chunks = textChunks(input, request, (resource) => rowsOf(plan, resource), writer, counted)
  const contentType = RUN_CONTENT_TYPES[request.format]

  let head = ''
  for (;;) {
    const next = await nextChunk(chunks)
    if (next.done) {
      noteAccess(ctx, { rowCount: counted.rows })
      return { body: head, contentType }
    }
    head += next.value
    if (head.length >= HEAD_BYTES) break
  }
  const encoder = new TextEncoder()
  const audited = streamedAccess(ctx, () => counted.rows)
  const stream = pushStream(
    (push) =>
      audited(async () => {
        await push(encoder.encode(head))
        for (;;) {
          const next = await nextChunk(chunks)
          if (next.done) return
          await push(encoder.encode(next.value))
        }
      }),
    (err) => ctx.log.error('$viewdefinition-run failed after its answer started', { error: (err as Error)?.message }),
  )
  return { body: stream, contentType }
}

// --- Internal helpers ---

async function viewOf(ctx: ServiceContext, request: RunRequest, storedId?: number): Promise<unknown> {
  if (request.viewResource) return request.viewResource
  return (await requireViewDefinition(ctx, storedId ?? request.viewReference!)).definition
}

/** The answer's text in chunks of about CHUNK_BYTES, rows filtered by `patient` and cut at `_limit`. */
async function* textChunks(
  input: AsyncIterable<unknown> | Iterable<unknown>,
  request: RunRequest,
  rowsFor: (resource: unknown) => Row[],
  writer: ReturnType<typeof rowWriter>,
  counted: { rows: number },
): AsyncGenerator<string> {
  let text = writer.start()
  let count = 0
  const limit = request.limit ?? Number.POSITIVE_INFINITY
  outer: for await (const resource of input) {
    if (request.patient && !ofPatient(resource, request.patient)) continue
    for (const row of rowsFor(resource)) {
      if (count >= limit) break outer
      text += writer.row(row, count === 0)
      count++
      counted.rows = count
    }
    if (text.length >= CHUNK_BYTES) {
      yield text
      text = ''
    }
    if (count >= limit) break
  }
  yield text + writer.end()
}

/** The next chunk; a view that cannot produce a row becomes the 400 of an invalid view. */
async function nextChunk(chunks: AsyncGenerator<string>): Promise<IteratorResult<string>> {
  try {
    return await chunks.next()
  } catch (err) {
    throw err instanceof ViewRunError ? runRefusal(err) : err
  }
}
