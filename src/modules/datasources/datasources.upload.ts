import { eq } from 'drizzle-orm'
import { extensionOf, extensionProblem, FILE_SOURCE_TYPES, isFileSourceType } from '../../connectors/file.ts'
import { connectorFor } from '../../connectors/registry.ts'
import type { ServiceContext } from '../../context.ts'
import { syncRuns } from '../../db/schema.ts'
import { AppError, conflict, invalid, issuesToDetails, tooLarge } from '../../errors.ts'
import { FileAccessError, noFileStoreMessage } from '../../lib/files.ts'
import { byteLimit } from '../../lib/streams.ts'
import { type DataSourceRow, type SyncResultDto, type SyncRunDto, toDataSourceDto, toSyncRunDto } from './datasources.schemas.ts'
import { maskConfig, unsealConfig } from './datasources.secrets.ts'
import { requireDataSource, updateDataSource } from './datasources.service.ts'
import { runSync, runSyncInBackground } from './datasources.sync.ts'
import { leaseHolder } from './datasources.sync-lease.ts'

/** Multipart framing allowed on top of the file itself before a body counts as too large. */
const MULTIPART_OVERHEAD = 64 * 1024
const DEFAULT_NAMES: Record<string, string> = {
  csv: 'data.csv',
  tsv: 'data.tsv',
  json: 'data.json',
  ndjson: 'data.ndjson',
  xml: 'data.xml',
  excel: 'data.xlsx',
  xlsx: 'data.xlsx',
}

interface UploadedFile {
  body: ReadableStream<Uint8Array>
  name?: string
  size?: number
}

/**
 * A file name safe as one path segment: letters, digits, `.`, `-`, `_` (others become `_`), no
 * leading dot, at most 100 characters keeping the extension. Undefined when nothing usable is left.
 */
export function safeFileName(name: string | undefined): string | undefined {
  const base = (name ?? '').split(/[\\/]/).pop() ?? ''
  let safe = base.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '')
  if (safe.length > 100) {
    const ext = extensionOf(safe)
    safe = ext && ext.length < 20 ? `${safe.slice(0, 99 - ext.length)}.${ext}` : safe.slice(0, 100)
  }
  return /[A-Za-z0-9]/.test(safe) ? safe : undefined
}

/** The tenant's upload folder: a readable slug plus a hash, so distinct tenant ids never share one. */
async function tenantFolder(tenantId: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(tenantId)))
  const hash = Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join('')
  const slug = tenantId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40)
  return `${slug}-${hash}`
}

/** The folder under FILES_DIR that holds the files uploaded to one source. */
export const uploadFolder = async (tenantId: string, sourceId: number) => `uploads/${await tenantFolder(tenantId)}/${sourceId}`

/** The filename of `Content-Disposition: …; filename="x.csv"` (or `filename*=UTF-8''x.csv`). */
function dispositionName(header: string | null): string | undefined {
  if (!header) return undefined
  const star = /filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i.exec(header)
  if (star) {
    try {
      return decodeURIComponent(star[1].trim().replace(/^"|"$/g, ''))
    } catch {
      return undefined
    }
  }
  return /filename\s*=\s*"?([^";]+)"?/i.exec(header)?.[1]
}

/**
 * The uploaded file of a request: the `file` field of a multipart/form-data body (read by the
 * runtime's FormData parser, so held in memory up to the limit), or else the raw body, streamed
 * (name from `?filename=` or Content-Disposition).
 */
async function fileOfRequest(request: Request, maxBytes: number, tooBig: () => AppError): Promise<UploadedFile> {
  const type = request.headers.get('content-type') ?? ''
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (!request.body)
    throw invalid(
      [{ path: 'body', message: 'required: the file as the body, or multipart/form-data with a file field' }],
      'The request has no file',
    )
  if (!/^multipart\/form-data/i.test(type)) {
    if (declared > maxBytes) throw tooBig()
    const name = new URL(request.url).searchParams.get('filename') ?? dispositionName(request.headers.get('content-disposition'))
    return { body: request.body, name, size: Number.isNaN(declared) ? undefined : declared }
  }
  if (declared > maxBytes + MULTIPART_OVERHEAD) throw tooBig()
  const limit = byteLimit(maxBytes + MULTIPART_OVERHEAD, tooBig)
  let form: FormData
  try {
    form = await new Request('http://upload.invalid/', {
      method: 'POST',
      headers: { 'content-type': type },
      body: request.body.pipeThrough(limit.transform),
      duplex: 'half',
    } as RequestInit).formData()
  } catch {
    if (limit.over()) throw tooBig()
    throw invalid([{ path: 'body', message: 'is not a readable multipart/form-data body' }], 'Malformed multipart body')
  }
  const file = form.get('file')
  if (!file || typeof file === 'string') {
    throw invalid(
      [{ path: 'file', message: 'required: the multipart body must carry the file in the field "file"' }],
      'The request has no file',
    )
  }
  return { body: file.stream(), name: file.name, size: file.size }
}

/** The limit an upload to this source must stay under, and the 413 that names it. */
function uploadLimit(ctx: ServiceContext, config: Record<string, unknown>) {
  const service = ctx.config.uploadMaxBytes
  const own = typeof config.maxFileSize === 'number' && config.maxFileSize > 0 ? config.maxFileSize : undefined
  if (own !== undefined && own < service) {
    return { max: own, tooBig: () => tooLarge(`The file is larger than the source's maxFileSize of ${own} bytes`) }
  }
  return {
    max: service,
    tooBig: () => tooLarge(`The file is larger than the upload limit of ${service} bytes (UPLOAD_MAX_BYTES)`),
  }
}

/** 409 while a sync of the source holds its lease: the file it reads must not change under it. */
async function refuseWhileSyncing(ctx: ServiceContext, source: DataSourceRow) {
  const holder = leaseHolder(ctx, source)
  if (holder === undefined) return
  const [run] = await ctx.db.select().from(syncRuns).where(eq(syncRuns.id, holder))
  throw conflict(
    `A synchronisation of data source ${source.id} is running; upload again when it has finished`,
    run ? toSyncRunDto(run) : null,
  )
}

export type UploadOutcome = { background: false; result: SyncResultDto } | { background: true; run: SyncRunDto }

/**
 * `PUT /api/datasources/{id}/file` (DATA-ENGINE: Files, uploads): stores the request's file under
 * `uploads/<tenant>/<source id>/<safe name>` in the file store (FILES_DIR, or R2 on Workers),
 * streamed and atomically (nothing is left behind on failure), within UPLOAD_MAX_BYTES and the source's `maxFileSize` (413) and `allowedExtensions`
 * (400); points the source's `filePath` at it (a config update with its change record), removes
 * the file uploaded before when its name differs, then syncs like `POST …/sync`.
 */
export async function uploadDataSourceFile(
  ctx: ServiceContext,
  id: number,
  request: Request,
  options: { background?: boolean } = {},
): Promise<UploadOutcome> {
  const files = ctx.files
  if (!files) throw new AppError('VALIDATION_ERROR', noFileStoreMessage(ctx.runtime, 'Uploading a file'))
  const source = await requireDataSource(ctx, id)
  if (!isFileSourceType(source.type)) {
    throw invalid(
      [
        {
          path: 'id',
          message: `data source ${id} is a ${source.type} source; files go to ${FILE_SOURCE_TYPES.join(', ')} sources`,
        },
      ],
      `Only file data sources take an uploaded file, and data source ${id} is a ${source.type} source`,
    )
  }
  const config = await unsealConfig(ctx.secrets, source.config)
  const { max, tooBig } = uploadLimit(ctx, config)
  await refuseWhileSyncing(ctx, source)
  const file = await fileOfRequest(request, max, tooBig)
  const format = typeof config.format === 'string' ? config.format : source.type
  const name = safeFileName(file.name) ?? DEFAULT_NAMES[format] ?? 'data'
  const allowed = Array.isArray(config.allowedExtensions) ? (config.allowedExtensions as string[]) : undefined
  const problem = extensionProblem(name, allowed)
  if (problem)
    throw invalid([{ path: 'file', message: `'${name}': ${problem}` }], `The file '${name}' is not allowed for this source`)
  const folder = await uploadFolder(ctx.scope.tenantId, id)
  const filePath = `${folder}/${name}`
  const next = { ...config, filePath }
  const parsed = connectorFor(source.type)?.configSchema.safeParse(next)
  if (parsed && !parsed.success)
    throw invalid(issuesToDetails(parsed.error.issues, 'config'), `Invalid ${source.type} data source config`)
  try {
    await files.write(filePath, file.body, { maxBytes: max, size: file.size })
  } catch (err) {
    if (err instanceof FileAccessError && err.reason === 'too_large') throw tooBig()
    throw err
  }
  await updateDataSource(ctx, id, { config: next })
  const previous = config.filePath
  if (typeof previous === 'string' && previous !== filePath && previous.startsWith(`${folder}/`)) await files.remove(previous)
  const updated = await requireDataSource(ctx, id)
  if (options.background) return { background: true, run: toSyncRunDto(await runSyncInBackground(ctx, updated, 'manual')) }
  const outcome = await runSync(ctx, updated, 'manual')
  return {
    background: false,
    result: {
      ...toDataSourceDto(outcome.source, await maskConfig(ctx.secrets, outcome.source.config)),
      message: outcome.message,
      status: outcome.source.syncStatus,
      recordsProcessed: outcome.recordsProcessed,
    },
  }
}
