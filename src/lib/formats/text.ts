import { FormatError } from './errors.ts'

/** Bytes as the parsers take them: a web stream (a file, a response body) or any async iterable. */
export type ByteSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>

/** Whether `label` is an encoding this runtime's TextDecoder knows (`utf-8`, `latin1`, `utf-16le`, …). */
export function isSupportedEncoding(label: string): boolean {
  try {
    new TextDecoder(label)
    return true
  } catch {
    return false
  }
}

/**
 * The chunks of a byte source; leaving the loop early (break, throw) cancels the stream so the
 * file or response behind it is closed.
 */
export async function* byteChunks(source: ByteSource): AsyncGenerator<Uint8Array> {
  if (!(source instanceof ReadableStream)) {
    yield* source
    return
  }
  const reader = source.getReader()
  let done = false
  try {
    for (;;) {
      const next = await reader.read()
      if (next.done) {
        done = true
        return
      }
      yield next.value
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {})
    reader.releaseLock()
  }
}

const BOMS: { bytes: number[]; encoding: string }[] = [
  { bytes: [0xef, 0xbb, 0xbf], encoding: 'utf-8' },
  { bytes: [0xff, 0xfe], encoding: 'utf-16le' },
  { bytes: [0xfe, 0xff], encoding: 'utf-16be' },
]

const startsWith = (head: Uint8Array, bytes: number[]) => bytes.every((b, i) => head[i] === b)

/**
 * Decodes bytes to text chunks (DATA-ENGINE: Files, `encoding`). A byte order mark wins over the
 * label and is dropped (as the WHATWG decode algorithm does); bytes that are not valid in the
 * encoding end the read with an error naming the offset, instead of silently becoming U+FFFD.
 */
export async function* decodeText(
  source: ByteSource,
  options: { encoding?: string; signal?: AbortSignal } = {},
): AsyncGenerator<string> {
  const label = options.encoding ?? 'utf-8'
  if (!isSupportedEncoding(label)) throw new FormatError(`Unknown text encoding '${label}'`)
  let decoder: TextDecoder | undefined
  let head: Uint8Array = new Uint8Array(0)
  let offset = 0
  const decode = (bytes: Uint8Array, stream: boolean) => {
    try {
      return decoder!.decode(bytes, { stream })
    } catch {
      throw new FormatError(
        `The file is not valid ${decoder!.encoding} text (invalid bytes after byte ${offset}); set encoding to the file's character set, e.g. "latin1"`,
      )
    }
  }
  const open = (bytes: Uint8Array) => {
    const bom = BOMS.find((b) => startsWith(bytes, b.bytes))
    decoder = new TextDecoder(bom?.encoding ?? label, { fatal: true })
  }
  for await (const chunk of byteChunks(source)) {
    options.signal?.throwIfAborted()
    if (!decoder) {
      head = concat(head, chunk)
      if (head.byteLength < 3) continue
      open(head)
      const text = decode(head, true)
      offset += head.byteLength
      if (text) yield text
      continue
    }
    const text = decode(chunk, true)
    offset += chunk.byteLength
    if (text) yield text
  }
  const pending: Uint8Array = decoder ? new Uint8Array(0) : head
  if (!decoder) open(head)
  const rest = decode(pending, false)
  if (rest) yield rest
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b
  const out = new Uint8Array(a.byteLength + b.byteLength)
  out.set(a)
  out.set(b, a.byteLength)
  return out
}

/** All text of a source, refused with `tooLarge()` past `maxChars` (for formats parsed whole). */
export async function readText(
  source: ByteSource,
  options: { encoding?: string; signal?: AbortSignal; maxChars: number; tooLarge: () => Error },
): Promise<string> {
  const parts: string[] = []
  let length = 0
  for await (const text of decodeText(source, options)) {
    length += text.length
    if (length > options.maxChars) throw options.tooLarge()
    parts.push(text)
  }
  return parts.join('')
}
