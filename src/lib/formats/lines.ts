/**
 * The lines of a UTF-8 byte stream (NDJSON), decoded as they arrive: only the current partial line
 * is held, never the whole body. `\n` and `\r\n` end a line; blank lines are skipped; a last line
 * without a newline is kept. Each line comes with its 1-based number.
 */
export async function* textLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<{ line: string; number: number }> {
  const reader = stream.getReader()
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let rest = ''
  let number = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      rest += decoder.decode(value, { stream: true })
      let start = 0
      for (let end = rest.indexOf('\n'); end !== -1; end = rest.indexOf('\n', start)) {
        number++
        const line = rest.slice(start, end).replace(/\r$/, '')
        start = end + 1
        if (line.trim() !== '') yield { line, number }
      }
      rest = rest.slice(start)
    }
    rest += decoder.decode()
    if (rest.trim() !== '') yield { line: rest.replace(/\r$/, ''), number: number + 1 }
  } finally {
    await reader.cancel().catch(() => {})
  }
}
