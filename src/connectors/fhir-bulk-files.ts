import { textLines } from '../lib/formats/lines.ts'
import type { Manifest, ManifestFile } from './fhir-bulk-config.ts'
import { type HttpClient, redact } from './shared/request.ts'
import { ConnectorError, type SourceRecord } from './types.ts'

/**
 * The files of a bulk export's manifest (fhir-bulk.ts reads the export): NDJSON streamed line by
 * line, an output line as its resource keyed `Type/id`, a deleted line as the removals of its
 * Bundle, and the error files checked before any record is read.
 */

/** How many error lines are quoted in the sync's message. */
const MAX_QUOTED_ERRORS = 5

/**
 * The manifest's error files, read before any record: a failed export applies nothing, not even
 * the files it could have read. Any line fails the sync, quoting the first few.
 */
export async function checkErrorFiles(
  manifest: Manifest,
  client: HttpClient,
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
      for await (const { line } of fileLines(client, url)) {
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
export async function* fileLines(client: HttpClient, url: URL): AsyncGenerator<{ line: string; number: number }> {
  const res = await client.send(url, { method: 'GET', headers: { Accept: 'application/fhir+ndjson' } })
  yield* textLines(client.stream(res))
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

/** An output line: the resource, keyed `Type/id`. */
export function resourceRecord(line: string, number: number, url: URL): SourceRecord {
  const resource = parseLine(line, number, url)
  const id = typeof resource.id === 'string' && resource.id !== '' ? resource.id : undefined
  return id ? { key: `${resource.resourceType}/${id}`, data: resource } : { data: resource }
}

/**
 * A `deleted` line (Bulk Data 2.0): a Bundle whose entries' `request` is `DELETE Type/id`; each
 * becomes the removal of that key.
 */
export function deletedRecords(line: string, number: number, url: URL): SourceRecord[] {
  const bundle = parseLine(line, number, url) as {
    resourceType: string
    entry?: { request?: { method?: string; url?: string } }[]
  }
  if (bundle.resourceType !== 'Bundle') {
    throw new ConnectorError(`Line ${number} of the deleted file ${url.pathname} is a ${bundle.resourceType}, not a Bundle`)
  }
  const out: SourceRecord[] = []
  for (const entry of Array.isArray(bundle.entry) ? bundle.entry : []) {
    const request = entry?.request
    if (request?.method?.toUpperCase() !== 'DELETE' || typeof request.url !== 'string') continue
    const match = /^([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/.*)?$/.exec(request.url.replace(/^\/+/, ''))
    if (!match)
      throw new ConnectorError(
        `Line ${number} of the deleted file ${url.pathname} deletes '${request.url.slice(0, 100)}', not Type/id`,
      )
    out.push({ key: `${match[1]}/${match[2]}`, data: { resourceType: match[1], id: match[2] }, deleted: true })
  }
  return out
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
