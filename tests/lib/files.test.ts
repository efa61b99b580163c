import { appendFile, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FileAccessError, type FileStore } from '../../src/lib/files.ts'
import { nodeFileStore } from '../../src/runtime/node-files.ts'

let root: string
let outside: string
let files: FileStore

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'files-store-'))
  outside = await mkdtemp(join(tmpdir(), 'files-outside-'))
  files = nodeFileStore(root)
  await writeFile(join(outside, 'secret.csv'), 'secret\n')
  await symlink(join(outside, 'secret.csv'), join(root, 'link.csv'))
  await symlink(outside, join(root, 'linked-dir'))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

const bytes = (text: string) => new TextEncoder().encode(text)
const streamOf = (...parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(bytes(p))
      c.close()
    },
  })
const reasonOf = async (run: () => Promise<unknown>) => {
  try {
    await run()
  } catch (err) {
    if (err instanceof FileAccessError) return `${err.reason}: ${err.message}`
    throw err
  }
  throw new Error('expected a FileAccessError')
}
const text = async (stream: ReadableStream<Uint8Array>) => new Response(stream).text()

describe('nodeFileStore: FILES_DIR through unstorage', () => {
  it('writes, stats, reads and removes a file under a nested path', async () => {
    expect(await files.write('a/b/c.csv', streamOf('id\n', '1\n'), { maxBytes: 100 })).toEqual({ size: 5 })
    expect(await readFile(join(root, 'a/b/c.csv'), 'utf8')).toBe('id\n1\n')
    expect(await files.stat('a/b/c.csv')).toEqual({ size: 5 })
    expect(await text(await files.read('a/b/c.csv'))).toBe('id\n1\n')
    await files.remove('a/b/c.csv')
    await files.remove('a/b/c.csv')
    expect(await reasonOf(() => files.stat('a/b/c.csv'))).toBe("not_found: File 'a/b/c.csv' does not exist in the files folder")
  })

  it('refuses paths an unstorage key would change or that leave the root', async () => {
    for (const path of ['../x.csv', '/etc/passwd', 'a:b.csv', 'a.csv?v=1', './a.csv', 'a//b.csv']) {
      expect(await reasonOf(() => files.stat(path))).toMatch(/^invalid_path: File path /)
      expect(await reasonOf(() => files.write(path, streamOf('x'), { maxBytes: 10 }))).toMatch(/^invalid_path: /)
    }
    expect(await reasonOf(() => files.read('link.csv'))).toBe("outside_root: File path 'link.csv' leads outside the files folder")
    expect(await reasonOf(() => files.stat('linked-dir/secret.csv'))).toMatch(/^outside_root: /)
    expect(await reasonOf(() => files.write('linked-dir/new.csv', streamOf('x'), { maxBytes: 10 }))).toMatch(/^outside_root: /)
    expect(await readdir(outside)).toEqual(['secret.csv'])
    expect(await reasonOf(() => files.stat('a'))).toMatch(/^(not_a_file|not_found): /)
  })

  it('streams a write to disk while the body still arrives, and renames it into place at the end', async () => {
    let push!: ReadableStreamDefaultController<Uint8Array>
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        push = c
      },
    })
    const done = files.write('streamed/big.csv', body, { maxBytes: 10 * 1024 * 1024 })
    const chunk = new Uint8Array(1024 * 1024).fill(65)
    push.enqueue(chunk)
    push.enqueue(chunk)
    const folder = join(root, 'streamed')
    const partSize = async () => {
      const names = await readdir(folder).catch(() => [] as string[])
      const part = names.find((n) => n.endsWith('.part'))
      return part ? (await stat(join(folder, part))).size : 0
    }
    for (let i = 0; i < 200 && (await partSize()) < 2 * chunk.byteLength; i++) await new Promise((r) => setTimeout(r, 10))
    expect(await partSize()).toBe(2 * chunk.byteLength)
    expect(await readdir(folder)).not.toContain('big.csv')
    push.enqueue(chunk)
    push.close()
    expect(await done).toEqual({ size: 3 * chunk.byteLength })
    expect(await readdir(folder)).toEqual(['big.csv'])
  })

  it('keeps the previous file whole when a write over the limit is refused', async () => {
    await files.write('keep.csv', streamOf('id\n1\n'), { maxBytes: 100 })
    expect(await reasonOf(() => files.write('keep.csv', streamOf('id\n', '2\n'.repeat(100)), { maxBytes: 100 }))).toBe(
      'too_large: File is larger than the limit of 100 bytes',
    )
    expect(await reasonOf(() => files.write('keep.csv', streamOf('x'), { maxBytes: 100, size: 101 }))).toMatch(/^too_large/)
    expect(await readFile(join(root, 'keep.csv'), 'utf8')).toBe('id\n1\n')
    expect((await readdir(root)).filter((n) => n.endsWith('.part'))).toEqual([])
  })

  it('reads lazily from the file: bytes appended after the first chunk are still read', async () => {
    const size = 4 * 1024 * 1024
    await writeFile(join(root, 'growing.csv'), Buffer.alloc(size, 66))
    const reader = (await files.read('growing.csv')).getReader()
    const first = await reader.read()
    expect(first.value!.byteLength).toBeLessThan(size)
    await appendFile(join(root, 'growing.csv'), 'tail')
    let total = first.value!.byteLength
    for (let r = await reader.read(); !r.done; r = await reader.read()) total += r.value.byteLength
    expect(total).toBe(size + 4)
  })
})
