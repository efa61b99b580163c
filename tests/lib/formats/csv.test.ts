import { describe, expect, it } from 'vitest'
import { csvBatches } from '../../../src/lib/formats/csv.ts'
import { FormatError } from '../../../src/lib/formats/errors.ts'
import { chunked, collect, failure, utf8 } from './helpers.ts'

const rows = async (text: string, options: Parameters<typeof csvBatches>[1] = {}, chunk = 7) =>
  (await collect(csvBatches(chunked(utf8(text), chunk), options))).flat()

describe('csvBatches', () => {
  it('keys rows by the header row, keeps values as text and handles CRLF and quoted fields across chunks', async () => {
    const text = 'id,name,note\r\n1,Ada,"says ""hi"", twice"\r\n2,Grace,"two\r\nlines"\r\n3,Alan,00123\r\n'
    expect(await rows(text, {}, 3)).toEqual([
      { id: '1', name: 'Ada', note: 'says "hi", twice' },
      { id: '2', name: 'Grace', note: 'two\r\nlines' },
      { id: '3', name: 'Alan', note: '00123' },
    ])
  })

  it('yields batches of batchSize', async () => {
    const text = `n\n${Array.from({ length: 25 }, (_, i) => i).join('\n')}\n`
    const batches = await collect(csvBatches(chunked(utf8(text), 5), { batchSize: 10 }))
    expect(batches.map((b) => b.length)).toEqual([10, 10, 5])
    expect(batches[2][4]).toEqual({ n: '24' })
  })

  it('names columns column1..N without headers', async () => {
    expect(await rows('a;b\n1;2\n', { hasHeaders: false, delimiter: ';' })).toEqual([
      { column1: 'a', column2: 'b' },
      { column1: '1', column2: '2' },
    ])
  })

  it('honours quoteChar and escapeChar', async () => {
    expect(await rows("a,b\n'1,2',x\n", { quoteChar: "'" })).toEqual([{ a: '1,2', b: 'x' }])
    expect(await rows('a,b\n"say \\"hi\\"",x\n', { escapeChar: '\\' })).toEqual([{ a: 'say "hi"', b: 'x' }])
  })

  it('skips skipRows lines before the header row and empty lines', async () => {
    expect(await rows('Export of 2026-01-01\nsource: lab\nid,v\n\n1,a\n\n2,b', { skipRows: 2 })).toEqual([
      { id: '1', v: 'a' },
      { id: '2', v: 'b' },
    ])
  })

  it('renames blank and repeated header names', async () => {
    expect(await rows('a,,a,a\n1,2,3,4\n')).toEqual([{ a: '1', column2: '2', a_2: '3', a_3: '4' }])
  })

  it('decodes the configured encoding and drops a BOM', async () => {
    const latin1 = new Uint8Array([0x6e, 0x0a, 0x4a, 0xfc, 0x72, 0x67, 0x65, 0x6e, 0x0a]) // "n\nJürgen\n"
    expect((await collect(csvBatches(chunked(latin1, 3), { encoding: 'latin1' }))).flat()).toEqual([{ n: 'Jürgen' }])
    expect(await rows('\uFEFFid\n1\n')).toEqual([{ id: '1' }])
  })

  it('refuses bytes that are not valid in the encoding instead of replacing them', async () => {
    const latin1 = new Uint8Array([0x6e, 0x0a, 0x4a, 0xfc, 0x72, 0x0a])
    const err = await failure(csvBatches(chunked(latin1), {}))
    expect(err).toBeInstanceOf(FormatError)
    expect(err.message).toMatch(/not valid utf-8 text.*encoding/)
  })

  it('names the line of a ragged row', async () => {
    const err = await failure(csvBatches(chunked(utf8('a,b\n1,2\n"x\ny",2\n3,4,5\n')), {}))
    expect(err).toBeInstanceOf(FormatError)
    expect(err.message).toBe('Malformed CSV on line 5: 3 fields where the header has 2')
  })

  it('names the line where an unclosed quote opens', async () => {
    const err = await failure(csvBatches(chunked(utf8('a,b\n1,2\n3,"open\n4,5\n')), {}))
    expect(err.message).toBe('Malformed CSV: a quoted field opened on line 3 is never closed')
  })

  it('reports a malformed closing quote with its line', async () => {
    const err = await failure(csvBatches(chunked(utf8('a,b\n1,2\n"3"x,4\n')), {}))
    expect(err.message).toMatch(/^Malformed CSV on line 3: trailing quote/)
  })

  it('stops when the signal aborts', async () => {
    const controller = new AbortController()
    controller.abort(new Error('stop'))
    const err = await failure(csvBatches(chunked(utf8('a\n1\n')), { signal: controller.signal }))
    expect(err.message).toBe('stop')
  })
})
