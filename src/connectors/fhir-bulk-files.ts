import { textLines } from '../lib/formats/lines.ts'
import type { Logger } from '../lib/logger.ts'
import type { Manifest, ManifestFile } from './fhir-bulk-config.ts'
import { isFhirId, RESOURCE_TYPE } from './fhir-types.ts'
import { type HttpClient, RequestTimeout, redact } from './shared/request.ts'
import { ConnectorError, type SourceRecord } from './types.ts'

/**
 * The files of a bulk export's manifest (fhir-bulk.ts reads the export): NDJSON streamed line by
 * line, an output line as its resource keyed `Type/id`, a deleted line as the removals of its
 * Bundle, and the error files checked before any record is read.
 */

/** How many error lines are quoted in the sync's message. */
const MAX_QUOTED_ERRORS = 5

/**
 * How a manifest's files are fetched: their client, and how long a download may go without a byte
 * while it is being read (config `timeout`, each request's limit; the client's own timer ends with
 * the headers, the source's `timeout` bounds the whole download).
 */
export interface BulkFiles {
  client: HttpClient
  idleMs: number
}

/**
 * The manifest's error files, read before any record: a failed export applies nothing, not even
 * the files it could have read. Any line fails the sync, quoting the first few.
 */
export async function checkErrorFiles(
  manifest: Manifest,
  files: BulkFiles,
  urlOf: (file: ManifestFile) => URL,
  fail: (err: unknown, where: string) => Error,
  outcomeText: (body: unknown) => string | undefined,
  secrets: readonly string[],
) {
  const errors: string[] = []
  let errorLines = 0
  for (const file of manifest.error ?? []) {
    const url = urlOf(file)
    try {
      for await (const { line } of fileLines(files, url)) {
        errorLines++
        if (errors.length < MAX_QUOTED_ERRORS) errors.push(errorLineText(line, outcomeText))
      }
    } catch (err) {
      throw fail(err, `reading the error file ${url.pathname}`)
    }
  }
  if (errorLines > 0) {
    const more = errorLines > errors.length ? ` (and ${errorLines - errors.length} more)` : ''
    throw new ConnectorError(
      redact(`The FHIR bulk export reported ${errorLines} error${errorLines === 1 ? '' : 's'}: ${errors.join(' | ')}${more}`, [
        ...secrets,
      ]),
    )
  }
}

/** The non-blank lines of one NDJSON file, streamed. */
export async function* fileLines({ client, idleMs }: BulkFiles, url: URL): AsyncGenerator<{ line: string; number: number }> {
  const res = await client.send(url, { method: 'GET', headers: { Accept: 'application/fhir+ndjson' } })
  yield* textLines(idleLimited(client.stream(res), idleMs))
}

/** Which file of the manifest is read, from which line, and the types asked for (`bulk.types`). */
export interface FilePart {
  kind: 'output' | 'deleted'
  file: ManifestFile
  types: ReadonlySet<string> | undefined
  /** Lines already committed (a resumed run): read again, not yielded. */
  skip: number
}

/**
 * The records of one output or deleted file, line by line after `skip`. Resources of a type not
 * asked for are skipped and logged with their count per type: a whole output file, unread, when
 * the manifest gives its type.
 */
export async function* fileRecords(
  files: BulkFiles,
  url: URL,
  { kind, file, types, skip }: FilePart,
  log: Logger,
): AsyncGenerator<{ records: SourceRecord[]; number: number }> {
  if (kind === 'output' && types && file.type !== undefined && !types.has(file.type)) {
    log.warn('skipped a bulk output file of a type not asked for', { file: url.pathname, type: file.type })
    return
  }
  const skipped = new Map<string, number>()
  for await (const { line, number } of fileLines(files, url)) {
    if (number <= skip) continue
    if (kind === 'deleted') {
      yield { records: deletedRecords(line, number, url), number }
      continue
    }
    const record = outputRecord(line, number, url, file, types, skipped)
    if (record) yield { records: [record], number }
  }
  if (skipped.size > 0) {
    log.warn('skipped bulk output resources of types not asked for', { file: url.pathname, skipped: Object.fromEntries(skipped) })
  }
}

function parseLine(line: string, number: number, url: URL): Record<string, unknown> {
  let doc: unknown
  try {
    doc = JSON.parse(line)
  } catch {
    throw new ConnectorError(`Line ${number} of the bulk file ${url.pathname} is not JSON`)
  }
  if (
    !doc ||
    typeof doc !== 'object' ||
    Array.isArray(doc) ||
    typeof (doc as { resourceType?: unknown }).resourceType !== 'string'
  ) {
    throw new ConnectorError(`Line ${number} of the bulk file ${url.pathname} is not a FHIR resource`)
  }
  return doc as Record<string, unknown>
}

/**
 * An output line: the resource, keyed `Type/id` (no key without an `id`), or undefined for a
 * resource of a type not asked for (`types`; a server may add referenced resources), counted in
 * `skipped` by type. The key is made of what the line says, so a line that could make a bad
 * key fails the sync rather than being dropped: a `resourceType` that is not a FHIR type name, an
 * `id` that is not a FHIR id, or a type other than the file's `type` in the manifest.
 */
export function outputRecord(
  line: string,
  number: number,
  url: URL,
  file: ManifestFile,
  types: ReadonlySet<string> | undefined,
  skipped: Map<string, number>,
): SourceRecord | undefined {
  const resource = parseLine(line, number, url)
  const type = resource.resourceType as string
  const where = `Line ${number} of the output file ${url.pathname}`
  if (!RESOURCE_TYPE.test(type)) throw new ConnectorError(`${where} has resourceType ${quote(type)}, not a FHIR resource type`)
  if (file.type !== undefined && file.type !== type) {
    throw new ConnectorError(`${where} is of type ${type}, but the manifest lists the file as type ${quote(file.type)}`)
  }
  if (types && !types.has(type)) {
    skipped.set(type, (skipped.get(type) ?? 0) + 1)
    return undefined
  }
  const id = resource.id
  if (id === undefined) return { data: resource }
  if (!isFhirId(id)) {
    throw new ConnectorError(
      `${where} has id ${quote(id)}, not a FHIR id (letters, digits, "-" and ".", at most 64, not dots only)`,
    )
  }
  return { key: `${type}/${id}`, data: resource }
}

/**
 * A `deleted` line (Bulk Data 2.0): a Bundle whose entries' `request` is `DELETE Type/id`; each
 * becomes the removal of that key. An entry without a `request.method` (or with another method) is
 * no deletion; a `request` that is not an object, a `method` that is not a string, or a `DELETE`
 * whose `url` is not `Type/id` fails the sync: skipping it would keep a deleted row.
 */
export function deletedRecords(line: string, number: number, url: URL): SourceRecord[] {
  const bundle = parseLine(line, number, url) as { resourceType: string; entry?: unknown }
  const where = `Line ${number} of the deleted file ${url.pathname}`
  if (bundle.resourceType !== 'Bundle') throw new ConnectorError(`${where} is a ${bundle.resourceType}, not a Bundle`)
  const out: SourceRecord[] = []
  for (const entry of Array.isArray(bundle.entry) ? (bundle.entry as unknown[]) : []) {
    const request = isObject(entry) ? entry.request : undefined
    if (request === undefined) continue
    if (!isObject(request)) throw new ConnectorError(`${where} has an entry whose request is not an object`)
    const { method, url: target } = request
    if (method === undefined) continue
    if (typeof method !== 'string') throw new ConnectorError(`${where} has an entry whose request.method is not a string`)
    if (method.toUpperCase() !== 'DELETE') continue
    const match =
      typeof target === 'string'
        ? /^([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/.*)?$/.exec(target.replace(/^\/+/, ''))
        : null
    if (!match || !isFhirId(match[2])) throw new ConnectorError(`${where} deletes ${quote(target)}, not Type/id`)
    out.push({ key: `${match[1]}/${match[2]}`, data: { resourceType: match[1], id: match[2] }, deleted: true })
  }
  return out
}

/**
 * `body`, failing with a RequestTimeout when the server sends nothing for `idleMs` while a read
 * waits (pulled on demand: the time the sync spends writing a batch does not count).
 */
function idleLimited(body: ReadableStream<Uint8Array>, idleMs: number): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let timer: ReturnType<typeof setTimeout> | undefined
        const idle = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new RequestTimeout(idleMs)), idleMs)
        })
        try {
          const { done, value } = await Promise.race([reader.read(), idle])
          if (done) controller.close()
          else controller.enqueue(value)
        } catch (err) {
          await reader.cancel(err).catch(() => {})
          throw err
        } finally {
          clearTimeout(timer)
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  )
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A value from a line, quoted short for a message. */
const quote = (v: unknown) => {
  const text = JSON.stringify(v) ?? String(v)
  return text.length > 100 ? `${text.slice(0, 100)}…` : text
}

/** An error file's line: its OperationOutcome's text, else the start of the line. */
function errorLineText(line: string, outcomeText: (body: unknown) => string | undefined): string {
  let doc: unknown
  try {
    doc = JSON.parse(line)
  } catch {
    return line.slice(0, 200)
  }
  return outcomeText(doc) ?? line.slice(0, 200)
}
