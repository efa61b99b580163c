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

/**
 * A pass-through stream that counts the bytes going through and errors with `tooLarge()` once more
 * than `max` arrived, so a limit holds while a body or file is read whatever size it declared.
 * `over()` tells that failure apart from others (a parser reading the stream may wrap the error),
 * `size()` is the count so far; `onBytes` sees each chunk's size as it passes (a budget shared by
 * several reads).
 */
export function byteLimit(max: number, tooLarge: () => Error, onBytes?: (bytes: number) => void) {
  let size = 0
  let over = false
  const transform = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      size += chunk.byteLength
      onBytes?.(chunk.byteLength)
      if (size > max) {
        over = true
        controller.error(tooLarge())
      } else controller.enqueue(chunk)
    },
  })
  return { transform, over: () => over, size: () => size }
}
