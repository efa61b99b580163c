import { describe, expect, it } from 'vitest'
import { byteLimit, readBytesLimited } from '../../src/lib/streams.ts'

const streamOf = (...chunks: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk))
      controller.close()
    },
  })

const tooLarge = () => new Error('too large')

describe('byteLimit', () => {
  it('passes a stream within the limit through unchanged and counts its bytes', async () => {
    const seen: number[] = []
    const limit = byteLimit(6, tooLarge, (n) => seen.push(n))
    const bytes = await readBytesLimited(streamOf('abc', 'def').pipeThrough(limit.transform), 100, tooLarge)
    expect(new TextDecoder().decode(bytes)).toBe('abcdef')
    expect(limit.size()).toBe(6)
    expect(limit.over()).toBe(false)
    expect(seen).toEqual([3, 3])
  })

  it("errors the stream with the caller's error once more than the limit arrived, and says so", async () => {
    const error = new Error('the file grew')
    const limit = byteLimit(5, () => error)
    const reader = streamOf('abc', 'def', 'ghi').pipeThrough(limit.transform).getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('abc')
    await expect(reader.read()).rejects.toBe(error)
    expect(limit.over()).toBe(true)
    expect(limit.size()).toBe(6)
  })
})
