import { AppError, invalid, issuesToDetails, tooLarge } from '../../errors.ts'
import { byteLimit, readBytesLimited } from '../../lib/streams.ts'
import { type ImportConfig, ImportConfigSchema, ImportJsonBody } from './rows.import.schemas.ts'

/** Multipart framing (boundaries, the config field) allowed on top of the file before a body is too large. */
const MULTIPART_OVERHEAD = 256 * 1024

type Row = Record<string, unknown>

/** What an import request carries: the config, and either a file or the rows themselves. */
export interface ImportInput {
  config: ImportConfig
  file?: { body: ReadableStream<Uint8Array>; name?: string; size: number }
  rows?: Row[]
  /** Bytes of the data (the file, or the JSON body), for `validation.maxFileSize`. */
  size: number
  /** `tenantId`/`userId` named in the body, checked against the token like any body's. */
  caller: { tenantId?: string; userId?: string }
}

const tooBig = (max: number) => tooLarge(`Imports are limited to ${max} bytes (IMPORT_MAX_BYTES)`)

/**
 * Reads `POST /api/panels/{id}/import` (DATA-ENGINE: import): multipart/form-data with the file in
 * `file` and the ImportConfig as JSON in `config`, or a JSON body `{ config, rows }`. Bodies over
 * IMPORT_MAX_BYTES are refused with 413 before they are read whole; the config is checked (400
 * naming each field). Nothing is written here.
 */
export async function readImportRequest(request: Request, maxBytes: number): Promise<ImportInput> {
  const type = request.headers.get('content-type') ?? ''
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (!request.body) throw invalid([{ path: 'body', message: 'required: multipart/form-data or { config, rows }' }])
  if (/^multipart\/form-data/i.test(type)) {
    if (declared > maxBytes + MULTIPART_OVERHEAD) throw tooBig(maxBytes)
    return readMultipart(request, type, maxBytes)
  }
  if (!/^application\/([\w.-]+\+)?json/i.test(type)) {
    throw new AppError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Expected multipart/form-data (file + config) or application/json ({ config, rows }), got ${type.split(';')[0] || 'none'}`,
    )
  }
  if (declared > maxBytes) throw tooBig(maxBytes)
  const bytes = await readBytesLimited(request.body, maxBytes, () => tooBig(maxBytes))
  const size = bytes.byteLength
  const text = new TextDecoder().decode(bytes)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new AppError('INVALID_JSON', 'The request body is not valid JSON')
  }
  const parsed = ImportJsonBody.safeParse(json)
  if (!parsed.success) throw invalid(issuesToDetails(parsed.error.issues), 'Invalid import request')
  const { config, rows, tenantId, userId } = parsed.data
  return { config, rows, size, caller: { tenantId, userId } }
}

// --- Internal helpers ---

async function readMultipart(request: Request, type: string, maxBytes: number): Promise<ImportInput> {
  const limit = byteLimit(maxBytes + MULTIPART_OVERHEAD, () => tooBig(maxBytes))
  const body = request.body!.pipeThrough(limit.transform)
  let form: FormData
  try {
    form = await new Request('http://import.invalid/', {
      method: 'POST',
      headers: { 'content-type': type },
      body,
      duplex: 'half',
    } as RequestInit).formData()
  } catch {
    if (limit.over()) throw tooBig(maxBytes)
    throw invalid([{ path: 'body', message: 'is not a readable multipart/form-data body' }], 'Malformed multipart body')
  }
  const file = form.get('file')
  if (!file || typeof file === 'string') {
    throw invalid([{ path: 'file', message: 'required: the file to import, in the multipart field "file"' }], 'No file to import')
  }
  if (file.size > maxBytes) throw tooBig(maxBytes)
  const config = parseConfigField(await fieldText(form.get('config')))
  const caller = { tenantId: textField(form, 'tenantId'), userId: textField(form, 'userId') }
  return { config, file: { body: file.stream(), name: file.name, size: file.size }, size: file.size, caller }
}

/** The `config` field: JSON text (a plain field or an attached .json part). */
async function fieldText(value: FormDataEntryValue | null): Promise<string | undefined> {
  if (value === null) return undefined
  return typeof value === 'string' ? value : value.text()
}

function parseConfigField(text: string | undefined): ImportConfig {
  if (text === undefined || text.trim() === '') {
    throw invalid([{ path: 'config', message: 'required: the ImportConfig as JSON in the multipart field "config"' }])
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw invalid([{ path: 'config', message: 'is not valid JSON' }], 'The import config is not valid JSON')
  }
  const parsed = ImportConfigSchema.safeParse(json)
  if (!parsed.success) throw invalid(issuesToDetails(parsed.error.issues, 'config'), 'Invalid import config')
  return parsed.data
}

function textField(form: FormData, name: string): string | undefined {
  const v = form.get(name)
  return typeof v === 'string' && v !== '' ? v : undefined
}
