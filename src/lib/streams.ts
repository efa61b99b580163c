/**
 * Reads a byte stream whole, but never more than `max` bytes: past that the stream is cancelled
 * and `tooLarge()` is thrown, so an oversized body is refused without being held in memory.
 */
export async function readBytesLimited(
  stream: ReadableStream<Uint8Array>,
  max: number,
  tooLarge: () => Error,
): Promise<Uint8Array> {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel().catch(() => {})
      throw tooLarge()
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/** `readBytesLimited` decoded as UTF-8 text. */
export async function readTextLimited(stream: ReadableStream<Uint8Array>, max: number, tooLarge: () => Error): Promise<string> {
  return new TextDecoder().decode(await readBytesLimited(stream, max, tooLarge))
}
