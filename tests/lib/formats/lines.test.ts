import { describe, expect, it } from 'vitest'
import { FormatError } from '../../../src/lib/formats/errors.ts'
import { MAX_LINE_LENGTH, textLines } from '../../../src/lib/formats/lines.ts'
import { utf8 } from './helpers.ts'

/** A stream of `bytes` cut into chunks of `size` bytes. */
const streamOf = (bytes: Uint8Array, size: number) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.length; i += size) c.enqueue(bytes.slice(i, i + size))
      c.close()
    },
  })

const lines = async (stream: ReadableStream<Uint8Array>) => {
  const out: { line: string; number: number }[] = []
  for await (const l of textLines(stream)) out.push(l)
  return out
}

const failure = async (stream: ReadableStream<Uint8Array>) => {
  try {
    await lines(stream)
  } catch (err) {
    return err as Error
  }
  throw new Error('expected textLines to fail')
}

describe('textLines', () => {
  const text = '{"a":"Müller"}\r\n\n{"b":"日本"}\r\n  \n{"c":"ç😀"}'
  const expected = [
    { line: '{"a":"Müller"}', number: 1 },
    { line: '{"b":"日本"}', number: 3 },
    { line: '{"c":"ç😀"}', number: 5 },
  ]

  it('gives the same lines whatever the chunks: cut inside \\r\\n, inside multi-byte characters, inside lines', async () => {
    const bytes = utf8(text)
    for (let size = 1; size <= bytes.length; size++)
      expect(await lines(streamOf(bytes, size)), `chunks of ${size}`).toEqual(expected)
  })

  it('keeps a last line without a newline and skips blank lines', async () => {
    expect(await lines(streamOf(utf8('\n\r\n  x  \r'), 2))).toEqual([{ line: '  x  ', number: 3 }])
    expect(await lines(streamOf(utf8(''), 1))).toEqual([])
  })

  it('reads a line of MAX_LINE_LENGTH characters arriving in many chunks, in linear time', async () => {
    const long = 'x'.repeat(MAX_LINE_LENGTH)
    const started = performance.now()
    const got = await lines(streamOf(utf8(`{}\n${long}\r\n{}`), 4 * 1024))
    // Rescanning the open line on each of the 4096 chunks takes about 15 s; one scan well under 1 s.
    expect(performance.now() - started).toBeLessThan(3_000)
    expect(got.map((l) => [l.number, l.line.length])).toEqual([
      [1, 2],
      [2, MAX_LINE_LENGTH],
      [3, 2],
    ])
  })

  it('fails with a FormatError naming the line once a line is longer than MAX_LINE_LENGTH, without reading on', async () => {
    const tooLong = await failure(streamOf(utf8(`{}\n\n${'x'.repeat(MAX_LINE_LENGTH + 1)}\n{}\n`), 64 * 1024))
    expect(tooLong).toBeInstanceOf(FormatError)
    expect(tooLong.message).toBe(`Line 3 is longer than the limit of ${MAX_LINE_LENGTH} characters`)

    // A body that never sends a newline is stopped at the limit, not read to its end.
    let sent = 0
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        sent += 1024 * 1024
        c.enqueue(utf8('y'.repeat(1024 * 1024)))
      },
    })
    expect((await failure(endless)).message).toBe(`Line 1 is longer than the limit of ${MAX_LINE_LENGTH} characters`)
    expect(sent).toBeLessThanOrEqual(MAX_LINE_LENGTH + 2 * 1024 * 1024)
  })
})
