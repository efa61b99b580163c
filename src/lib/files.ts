import { normalizeKey, type Storage } from 'unstorage'
import { byteLimit } from './streams.ts'

/**
 * The file root of `file` data sources and uploads, as a runtime provides it: FILES_DIR on Node
 * and Deno, the R2 bucket bound as FILES on Workers. Paths are relative to the root. A runtime
 * given no file storage leaves it undefined, and callers refuse file features there with a
 * message naming the runtime (`noFileStoreMessage`).
 */
export interface FileStore {
  /**
   * Checks a root-relative path and returns the file's size. Throws FileAccessError when the path
   * is absolute, escapes the root (`..`, or a symlink pointing outside), or names no regular file.
   */
  stat(path: string): Promise<{ size: number }>
  /** The file's bytes as a stream (read lazily; cancel the stream to stop reading). */
  read(path: string, options?: { signal?: AbortSignal }): Promise<ReadableStream<Uint8Array>>
  /**
   * Writes a file atomically, streamed (never held whole), creating folders. Stops with
   * FileAccessError once more than `maxBytes` arrived; nothing is left behind then. `size`, when
   * the caller knows it (Content-Length), lets a store that needs it up front (R2) take one request.
   */
  write(path: string, body: ReadableStream<Uint8Array>, options: { maxBytes: number; size?: number }): Promise<{ size: number }>
  /** Removes a file; a missing file is not an error. */
  remove(path: string): Promise<void>
}

export type FileAccessReason = 'invalid_path' | 'outside_root' | 'not_found' | 'not_a_file' | 'too_large'

/** A refused or failed file access; `message` is safe to show (names the relative path only). */
export class FileAccessError extends Error {
  constructor(
    readonly reason: FileAccessReason,
    message: string,
  ) {
    super(message)
    this.name = 'FileAccessError'
  }
}

/**
 * Syntactic check of a root-relative path, shared by config validation and every FileStore:
 * no absolute paths, drive letters, NUL bytes, backslashes or `..` segments.
 */
export function relativePathProblem(path: string): string | undefined {
  if (path === '' || path.trim() === '') return 'must not be empty'
  if (path.includes('\0')) return 'must not contain NUL bytes'
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path) || path.includes('\\')) return 'must be a path relative to the files root'
  if (path.split('/').some((s) => s === '..')) return "must not contain '..' segments"
  return undefined
}

/**
 * `relativePathProblem` plus what an unstorage key cannot carry: unstorage reads `:` as a folder
 * separator and cuts a key at `?`, and refuses `.` segments; such a path would name another file.
 */
export function filePathProblem(path: string): string | undefined {
  const problem = relativePathProblem(path)
  if (problem) return problem
  if (/[:?]/.test(path)) return "must not contain ':' or '?'"
  if (path.split('/').some((s) => s === '.' || s === '')) return "must not contain '.' or empty segments"
  return undefined
}

/** A file path as the unstorage key a driver receives (`uploads/a/x.csv` → `uploads:a:x.csv`). */
export const keyOfPath = (path: string) => normalizeKey(path)
/** The inverse of `keyOfPath` for paths that passed `filePathProblem` (no `:` of their own). */
export const pathOfKey = (key: string) => key.replace(/:/g, '/')

/**
 * What a runtime given no file storage answers for file features: the runtime, and the way out
 * (an R2 binding on Workers; a FileStore for a host that embeds the app; other source types).
 */
export function noFileStoreMessage(runtime: string, feature: string): string {
  const remedy =
    runtime === 'workers'
      ? 'bind an R2 bucket as FILES in wrangler.toml ([[r2_buckets]])'
      : 'give buildDeps a FileStore (files), e.g. nodeFileStore(FILES_DIR)'
  return `${feature} needs file storage, which the ${runtime} runtime was not given: ${remedy}, or use an api, fhir, database or webhook source`
}

/** A driver's raw value as a byte stream (drivers that cannot stream answer bytes or text). */
function asStream(value: unknown): ReadableStream<Uint8Array> {
  if (value instanceof ReadableStream) return value as ReadableStream<Uint8Array>
  if (typeof value === 'string' || value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    return new Blob([value as BlobPart]).stream()
  }
  throw new Error(`the file storage answered a ${typeof value} instead of bytes`)
}

/**
 * A FileStore over an unstorage storage (DATA-ENGINE: Files). Paths are checked with
 * `filePathProblem` and become keys; the driver answers `getMeta(key).size`, streams with
 * `getItemRaw(key, { type: 'stream' })` (bytes are accepted and wrapped) and takes a
 * ReadableStream in `setItemRaw(key, stream, { size })`, storing it whole or not at all. The
 * runtimes' drivers (`src/runtime/node-files.ts`, `src/runtime/workers-files.ts`) do so; unstorage's
 * own fs and s3 drivers read whole files into memory, so fs is wrapped and s3 is not used.
 */
export function storageFileStore(storage: Storage): FileStore {
  const keyOf = (path: string) => {
    const problem = filePathProblem(path)
    if (problem) throw new FileAccessError('invalid_path', `File path '${path}' ${problem}`)
    return keyOfPath(path)
  }
  const missing = (path: string) => new FileAccessError('not_found', `File '${path}' does not exist in the files folder`)

  return {
    async stat(path) {
      const meta = await storage.getMeta(keyOf(path), { nativeOnly: true })
      if (typeof meta.size !== 'number') throw missing(path)
      return { size: meta.size }
    },
    async read(path, options) {
      const raw = await storage.getItemRaw(keyOf(path), { type: 'stream', signal: options?.signal })
      if (raw === null || raw === undefined) throw missing(path)
      return asStream(raw)
    },
    async write(path, body, { maxBytes, size }) {
      const key = keyOf(path)
      if (size !== undefined && size > maxBytes) {
        await body.cancel().catch(() => {})
        throw new FileAccessError('too_large', `File is larger than the limit of ${maxBytes} bytes`)
      }
      const limit = byteLimit(
        maxBytes,
        () => new FileAccessError('too_large', `File is larger than the limit of ${maxBytes} bytes`),
      )
      try {
        await storage.setItemRaw(key, body.pipeThrough(limit.transform), { size })
      } catch (err) {
        if (limit.over()) throw new FileAccessError('too_large', `File is larger than the limit of ${maxBytes} bytes`)
        throw err
      }
      return { size: limit.size() }
    },
    async remove(path) {
      await storage.removeItem(keyOf(path))
    },
  }
}
