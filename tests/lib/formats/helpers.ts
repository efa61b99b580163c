/** Bytes as a source cut into chunks of `size`, so parsers meet rows and characters split across chunks. */
export async function* chunked(bytes: Uint8Array, size = 7): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size)
}

export const utf8 = (text: string) => new TextEncoder().encode(text)

/** Every batch of an async iterable of batches. */
export async function collect<T>(batches: AsyncIterable<T[]>): Promise<T[][]> {
  const out: T[][] = []
  for await (const b of batches) out.push(b)
  return out
}

/** The error an async iterable of batches ends with. */
export async function failure(batches: AsyncIterable<unknown>): Promise<Error> {
  try {
    for await (const _ of batches) {
      // drain
    }
  } catch (err) {
    return err as Error
  }
  throw new Error('expected the read to fail')
}
