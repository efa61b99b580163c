import type { R2Bucket, R2UploadedPart } from '@cloudflare/workers-types/index.ts'
import { createStorage, defineDriver } from 'unstorage'
import r2Driver from 'unstorage/drivers/cloudflare-r2-binding'
import { type FileStore, pathOfKey, storageFileStore } from '../lib/files.ts'

/** workerd's identity transform whose readable side has a known length, as R2's put needs. */
declare const FixedLengthStream: new (length: number) => TransformStream<Uint8Array, Uint8Array>

/** R2 multipart parts: at least 5 MiB each but the last, all of one size. */
const PART_BYTES = 5 * 1024 * 1024

/**
 * unstorage's `cloudflare-r2-binding` driver with object names as file paths and streamed writes.
 * The driver joins keys with `:`, so a file put in the bucket as `exports/patients.csv` would be
 * out of reach: keys are turned back into `/` paths before they reach it. Its `getMeta` spreads the
 * R2 object (whose fields are getters, so `size` is lost) and its `setItemRaw` hands a stream to
 * `put`, which takes only a stream of known length: the size comes from `head` here, and a stream
 * is put through a FixedLengthStream when its size is known (Content-Length), else uploaded in
 * 5 MiB multipart parts, so at most one part is held in memory either way.
 */
export const r2FilesDriver = defineDriver((options: { binding: R2Bucket }) => {
  const inner = r2Driver({ binding: options.binding as never })
  const bucket = options.binding

  /** Uploads a stream of unknown length part by part; aborts the upload when it fails. */
  async function putInParts(path: string, body: ReadableStream<Uint8Array>) {
    const upload = await bucket.createMultipartUpload(path)
    const parts: R2UploadedPart[] = []
    let part = new Uint8Array(PART_BYTES)
    let filled = 0
    const flush = async (bytes: Uint8Array) => {
      parts.push(await upload.uploadPart(parts.length + 1, bytes))
    }
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        let offset = 0
        while (offset < chunk.byteLength) {
          const n = Math.min(chunk.byteLength - offset, PART_BYTES - filled)
          part.set(chunk.subarray(offset, offset + n), filled)
          filled += n
          offset += n
          if (filled === PART_BYTES) {
            await flush(part)
            part = new Uint8Array(PART_BYTES)
            filled = 0
          }
        }
      }
      if (filled > 0 || parts.length === 0) await flush(part.subarray(0, filled))
      await upload.complete(parts)
    } catch (err) {
      await upload.abort().catch(() => {})
      throw err
    }
  }

  return {
    ...inner,
    name: 'files-r2',
    options,
    hasItem: (key, opts) => inner.hasItem(pathOfKey(key), opts),
    getItem: (key, opts) => inner.getItem(pathOfKey(key), opts),
    getItemRaw: (key, opts) => inner.getItemRaw?.(pathOfKey(key), opts ?? {}),
    setItem: (key, value, opts) => inner.setItem?.(pathOfKey(key), value, opts ?? {}),
    removeItem: (key, opts) => inner.removeItem?.(pathOfKey(key), opts ?? {}),
    async getMeta(key) {
      const object = await bucket.head(pathOfKey(key))
      return object ? { size: object.size, mtime: object.uploaded } : null
    },
    async setItemRaw(key, value, opts) {
      const path = pathOfKey(key)
      if (!(value instanceof ReadableStream)) {
        await bucket.put(path, value)
        return
      }
      if (typeof opts?.size !== 'number') return putInParts(path, value)
      const fixed = new FixedLengthStream(opts.size)
      const piped = value.pipeTo(fixed.writable)
      const [put] = await Promise.allSettled([bucket.put(path, fixed.readable as never), piped])
      // The source's error (over the limit, a broken body) is the cause when both fail.
      await piped
      if (put.status === 'rejected') throw put.reason
    },
  }
})

/** The R2 bucket bound as FILES as the FileStore of `file` sources and uploads. */
export function r2FileStore(bucket: R2Bucket): FileStore {
  return storageFileStore(createStorage({ driver: r2FilesDriver({ binding: bucket }) }))
}
