import { FormatError } from './errors.ts'

/**
 * The longest line `textLines` holds, in characters (16 MiB of ASCII): a body that never sends a
 * newline ends in a FormatError instead of growing one string without bound. A FHIR resource on
 * one NDJSON line is far smaller.
 */
export const MAX_LINE_LENGTH = 16 * 1024 * 1024

/**
 * The lines of a UTF-8 byte stream (NDJSON), decoded as they arrive: only the current partial line
 * is held, never the whole body. `\n` and `\r\n` end a line; blank lines are skipped; a last line
 * without a newline is kept. Each line comes with its 1-based number. A line longer than
 * MAX_LINE_LENGTH is a FormatError naming its number.
 *
 * Each chunk is searched for `\n` once: the pieces of a line still open are kept apart and joined
 * when it ends, so a long line costs time in proportion to its length, not its length squared.
 */
export async function* textLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<{ line: string; number: number }> {
  const reader = stream.getReader()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  /** The pieces of the line still open, and their length. */
  const open: string[] = []
  let openLength = 0
  let number = 0
  const tooLong = () => new FormatError(`Line ${number + 1} is longer than the limit of ${MAX_LINE_LENGTH} characters`)
  /** The open line ended by `last` (the text before its newline), `\r` dropped. */
  const close = (last: string) => {
    // One character over the limit may be the `\r` of a `\r\n`.
    if (openLength + last.length > MAX_LINE_LENGTH + 1) throw tooLong()
    let line = last
    if (open.length > 0) {
      open.push(last)
      line = open.join('')
      open.length = 0
      openLength = 0
    }
    if (line.endsWith('\r')) line = line.slice(0, -1)
    if (line.length > MAX_LINE_LENGTH) throw tooLong()
    return line
  }
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      const text = decoder.decode(value, { stream: true })
      let start = 0
      for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
        const line = close(text.slice(start, end))
        number++
        start = end + 1
        if (line.trim() !== '') yield { line, number }
      }
      if (start < text.length) {
        if (openLength + text.length - start > MAX_LINE_LENGTH + 1) throw tooLong()
        open.push(text.slice(start))
        openLength += text.length - start
      }
    }
    const line = close(decoder.decode())
    if (line.trim() !== '') yield { line, number: number + 1 }
  } finally {
    await reader.cancel().catch(() => {})
  }
}
