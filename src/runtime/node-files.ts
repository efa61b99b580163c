import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, realpath, rename, rm, stat } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { FileAccessError, type FileStore, relativePathProblem } from '../lib/files.ts'

/** FILES_DIR on a real file system (Node, and Deno through its node: compatibility). */
export function nodeFileStore(root: string): FileStore {
  let realRoot: Promise<string> | undefined
  const rootPath = async () => {
    realRoot ??= mkdir(root, { recursive: true }).then(() => realpath(root))
    return realRoot
  }
  const inside = (base: string, target: string) => {
    const rel = relative(base, target)
    return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep)
  }

  /** The real path of an existing file, symlinks followed, refused when it leaves the root. */
  async function resolveExisting(path: string) {
    const problem = relativePathProblem(path)
    if (problem) throw new FileAccessError('invalid_path', `File path '${path}' ${problem}`)
    const base = await rootPath()
    let real: string
    try {
      real = await realpath(join(base, path))
    } catch {
      throw new FileAccessError('not_found', `File '${path}' does not exist in the files folder`)
    }
    if (!inside(base, real)) throw new FileAccessError('outside_root', `File path '${path}' leads outside the files folder`)
    const info = await stat(real)
    if (!info.isFile()) throw new FileAccessError('not_a_file', `'${path}' is not a regular file`)
    return { real, size: info.size }
  }

  return {
    async stat(path) {
      const { size } = await resolveExisting(path)
      return { size }
    },
    async read(path, options) {
      const { real } = await resolveExisting(path)
      const stream = createReadStream(real, { highWaterMark: 256 * 1024, signal: options?.signal })
      return Readable.toWeb(stream) as unknown as ReadableStream<Uint8Array>
    },
    async write(path, body, { maxBytes }) {
      const problem = relativePathProblem(path)
      if (problem) throw new FileAccessError('invalid_path', `File path '${path}' ${problem}`)
      const base = await rootPath()
      const target = join(base, path)
      await mkdir(dirname(target), { recursive: true })
      const parent = await realpath(dirname(target))
      if (parent !== base && !inside(base, parent)) {
        throw new FileAccessError('outside_root', `File path '${path}' leads outside the files folder`)
      }
      const temp = `${target}.${crypto.randomUUID()}.part`
      const out = createWriteStream(temp, { flags: 'wx' })
      let size = 0
      try {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
          size += chunk.byteLength
          if (size > maxBytes) throw new FileAccessError('too_large', `File is larger than the limit of ${maxBytes} bytes`)
          if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
        }
        out.end()
        await finished(out)
        await rename(temp, target)
        return { size }
      } catch (err) {
        // The file may still be opening: wait until the stream has closed its descriptor, or the
        // open would create the temporary file again after it was removed.
        if (!out.closed) {
          const closed = new Promise<void>((resolve) => out.once('close', () => resolve()))
          out.destroy()
          await closed
        }
        await rm(temp, { force: true })
        throw err
      }
    },
    async remove(path) {
      const problem = relativePathProblem(path)
      if (problem) throw new FileAccessError('invalid_path', `File path '${path}' ${problem}`)
      await rm(join(await rootPath(), path), { force: true })
    },
  }
}
