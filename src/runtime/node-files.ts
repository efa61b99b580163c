import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, realpath, rename, rm, stat } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { Readable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { createStorage, defineDriver } from 'unstorage'
import fsDriver from 'unstorage/drivers/fs'
import { FileAccessError, type FileStore, pathOfKey, storageFileStore } from '../lib/files.ts'

/**
 * unstorage's `fs` driver under FILES_DIR, with what it lacks for files that users and uploads
 * put there. The fs driver maps a key to `join(base, key)` and refuses only `..` segments, so a
 * symlink leads anywhere: every access here resolves the real path and refuses one outside the
 * root. Its `getItemRaw` reads the whole file and its `setItemRaw` writes in place (a failed or
 * refused upload would leave half a file over the previous one): reads stream from a file stream
 * here, and writes stream into a temporary file renamed into place. The rest (keys, clear) is
 * the fs driver's.
 */
export const nodeFilesDriver = defineDriver((options: { base: string }) => {
  const inner = fsDriver({ base: options.base })
  let realRoot: Promise<string> | undefined
  const rootPath = () => {
    realRoot ??= mkdir(options.base, { recursive: true }).then(() => realpath(options.base))
    return realRoot
  }
  const inside = (base: string, target: string) => {
    const rel = relative(base, target)
    return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep)
  }
  const outside = (path: string) => new FileAccessError('outside_root', `File path '${path}' leads outside the files folder`)

  /** The real path of an existing file, symlinks followed; undefined when there is none. */
  async function existing(key: string) {
    const path = pathOfKey(key)
    const base = await rootPath()
    let real: string
    try {
      real = await realpath(join(base, path))
    } catch {
      return undefined
    }
    if (!inside(base, real)) throw outside(path)
    const info = await stat(real)
    if (!info.isFile()) throw new FileAccessError('not_a_file', `'${path}' is not a regular file`)
    return { real, info }
  }

  /** Streams a body into `<target>.<uuid>.part` and renames it into place; removes it on failure. */
  async function writeAtomically(key: string, body: ReadableStream<Uint8Array>) {
    const path = pathOfKey(key)
    const base = await rootPath()
    const target = join(base, path)
    await mkdir(dirname(target), { recursive: true })
    const parent = await realpath(dirname(target))
    if (parent !== base && !inside(base, parent)) throw outside(path)
    const temp = `${target}.${crypto.randomUUID()}.part`
    const out = createWriteStream(temp, { flags: 'wx' })
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
      }
      out.end()
      await finished(out)
      await rename(temp, target)
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
  }

  return {
    ...inner,
    name: 'files-fs',
    options,
    async hasItem(key) {
      return (await existing(key)) !== undefined
    },
    async getMeta(key) {
      const found = await existing(key)
      return found ? { size: found.info.size, mtime: found.info.mtime, atime: found.info.atime } : null
    },
    async getItem(key) {
      const found = await existing(key)
      return found ? inner.getItem(key, {}) : null
    },
    async getItemRaw(key, opts) {
      const found = await existing(key)
      if (!found) return null
      if (opts?.type !== 'stream') return inner.getItemRaw?.(key, opts ?? {})
      const stream = createReadStream(found.real, { highWaterMark: 256 * 1024, signal: opts.signal })
      return Readable.toWeb(stream)
    },
    async setItem(key, value) {
      await writeAtomically(key, new Blob([value]).stream())
    },
    async setItemRaw(key, value) {
      await writeAtomically(key, value instanceof ReadableStream ? value : new Blob([value]).stream())
    },
    async removeItem(key) {
      await rm(join(await rootPath(), pathOfKey(key)), { force: true })
    },
  }
})

/** FILES_DIR on a real file system (Node, and Deno through its node: compatibility). */
export function nodeFileStore(root: string): FileStore {
  return storageFileStore(createStorage({ driver: nodeFilesDriver({ base: root }) }))
}
