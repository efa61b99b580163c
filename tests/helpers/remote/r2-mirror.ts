import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'

/** The part of an R2 bucket (Miniflare's proxy of the worker's `FILES`) the mirror uses. */
export interface MirrorBucket {
  put(key: string, value: ArrayBuffer | Uint8Array): Promise<{ etag: string } | null>
  get(key: string): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>
  delete(key: string): Promise<void>
  list(options?: { cursor?: string }): Promise<{ objects: { key: string; etag: string }[]; truncated: boolean; cursor?: string }>
}

/**
 * A test's files folder kept the same as the worker's R2 bucket, as a Deno or Node server reads
 * and writes the folder itself (FILES_DIR): before a request, what the test wrote, changed or
 * removed in the folder goes to the bucket (object names are the files' paths in the folder, as
 * the service's file store names them); after it, what the worker wrote or removed in the bucket
 * (uploads, exports) comes back to the folder. Each side's change is told apart from the other's
 * by what the mirror last saw there: a file's content digest, an object's etag.
 */
export function r2Mirror(bucket: MirrorBucket, dir: string) {
  /** Per path: the digest of the file as last mirrored, and the etag of its object then. */
  const seen = new Map<string, { digest: string; etag: string }>()

  const filesOf = (): Map<string, Buffer> => {
    const out = new Map<string, Buffer>()
    const walk = (folder: string) => {
      for (const entry of readdirSync(folder, { withFileTypes: true })) {
        const path = join(folder, entry.name)
        if (entry.isDirectory()) walk(path)
        else if (entry.isFile()) out.set(relative(dir, path).split(sep).join('/'), readFileSync(path))
      }
    }
    walk(dir)
    return out
  }
  const objectsOf = async (): Promise<Map<string, string>> => {
    const out = new Map<string, string>()
    let cursor: string | undefined
    do {
      const page = await bucket.list(cursor ? { cursor } : undefined)
      for (const o of page.objects) out.set(o.key, o.etag)
      cursor = page.truncated ? page.cursor : undefined
    } while (cursor)
    return out
  }
  const digestOf = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

  return {
    /** Empties the bucket and forgets what was mirrored: a new test's folder. */
    async clear() {
      for (const key of (await objectsOf()).keys()) await bucket.delete(key)
      seen.clear()
    },

    /** The folder's changes since the last mirror, into the bucket. */
    async toBucket() {
      const files = filesOf()
      for (const [path, bytes] of files) {
        const digest = digestOf(bytes)
        if (seen.get(path)?.digest === digest) continue
        const object = await bucket.put(path, new Uint8Array(bytes))
        seen.set(path, { digest, etag: object?.etag ?? '' })
      }
      for (const path of [...seen.keys()]) {
        if (files.has(path)) continue
        await bucket.delete(path)
        seen.delete(path)
      }
    },

    /** The bucket's changes since the last mirror, into the folder. */
    async toFolder() {
      const objects = await objectsOf()
      for (const [path, etag] of objects) {
        if (seen.get(path)?.etag === etag) continue
        const object = await bucket.get(path)
        if (!object) continue
        const bytes = Buffer.from(await object.arrayBuffer())
        mkdirSync(dirname(join(dir, path)), { recursive: true })
        writeFileSync(join(dir, path), bytes)
        seen.set(path, { digest: digestOf(bytes), etag })
      }
      for (const path of [...seen.keys()]) {
        if (objects.has(path)) continue
        rmSync(join(dir, path), { force: true })
        seen.delete(path)
      }
    },
  }
}
