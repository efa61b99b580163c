/**
 * The file root of `file` data sources and uploads (FILES_DIR), as a runtime provides it. Paths are
 * relative to the root; a runtime without a file system (Cloudflare Workers) provides none, and
 * callers refuse file features there with a message naming the runtime.
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
   * Writes a file atomically (a temporary file renamed into place), creating folders. Stops with
   * FileAccessError once more than `maxBytes` arrived; nothing is left behind then.
   */
  write(path: string, body: ReadableStream<Uint8Array>, options: { maxBytes: number }): Promise<{ size: number }>
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

/** The message a runtime without a file system answers for file features. */
export const noFileSystemMessage = (runtime: string, feature: string) =>
  `${feature} needs a file system, which the ${runtime} runtime does not have; use an api, fhir, database or webhook source there`
