import { describe, expect, it } from 'vitest'
import { FormatError } from '../../../src/lib/formats/errors.ts'
import { jsonBatches, recordSelector } from '../../../src/lib/formats/json.ts'
import { chunked, collect, failure, utf8 } from './helpers.ts'

const records = async (text: string, options: Parameters<typeof jsonBatches>[1] = {}) =>
  (await collect(jsonBatches(chunked(utf8(text), 5), options))).flat()

describe('jsonBatches', () => {
  it('reads the elements of a top-level array in batches, wrapping non-objects as { value }', async () => {
    const batches = await collect(jsonBatches(chunked(utf8('[{"a":1},{"a":2},{"a":3},4]')), { batchSize: 2 }))
    expect(batches).toEqual([
      [{ a: 1 }, { a: 2 }],
      [{ a: 3 }, { value: 4 }],
    ])
  })

  it('reads the array at jsonPath and ignores the rest of the document', async () => {
    const doc = '{"meta":{"total":2},"data":{"items":[{"id":"p1","name":"Zoë"},{"id":"p2"}]}}'
    expect(await records(doc, { jsonPath: '$.data.items' })).toEqual([{ id: 'p1', name: 'Zoë' }, { id: 'p2' }])
    expect(await records(doc, { jsonPath: 'data.items' })).toHaveLength(2)
  })

  it('takes every match of a wildcard path as a record', async () => {
    const doc = '{"entry":[{"resource":{"id":"a"}},{"resource":{"id":"b"}}]}'
    expect(await records(doc, { jsonPath: '$.entry[*].resource' })).toEqual([{ id: 'a' }, { id: 'b' }])
    expect(recordSelector('$.entry[*].resource')).toEqual({ selector: '$.entry.*.resource', arrayAtPath: false })
    expect(recordSelector('a[0].b')).toEqual({ selector: '$.a.0.b.*', arrayAtPath: true })
  })

  it('refuses a jsonPath that points to an object', async () => {
    const err = await failure(jsonBatches(chunked(utf8('{"data":{"x":1}}')), { jsonPath: '$.data' }))
    expect(err.message).toBe('jsonPath "$.data" points to an object in the file, not an array')
  })

  it('detects NDJSON: one record per line, blank lines ignored', async () => {
    expect(await records('{"a":1}\n{"a":2}\n\n{"a":3}\n')).toEqual([{ a: 1 }, { a: 2 }, { a: 3 }])
    expect(await records('{"a":1}')).toEqual([{ a: 1 }])
  })

  it('applies jsonPath to each NDJSON line', async () => {
    expect(await records('{"rows":[{"a":1}]}\n{"rows":[{"a":2},{"a":3}]}\n', { jsonPath: 'rows' })).toEqual([
      { a: 1 },
      { a: 2 },
      { a: 3 },
    ])
  })

  it('reads UTF-16 with a BOM', async () => {
    const text = '[{"name":"Jürgen"}]'
    const bytes = new Uint8Array(2 + text.length * 2)
    bytes.set([0xff, 0xfe])
    for (let i = 0; i < text.length; i++) bytes[2 + i * 2] = text.charCodeAt(i)
    expect((await collect(jsonBatches(chunked(bytes, 3)))).flat()).toEqual([{ name: 'Jürgen' }])
  })

  it('names the line and byte of a syntax error', async () => {
    const err = await failure(jsonBatches(chunked(utf8('[{"a":1},\n{"a":2},\n{"a":}]'))))
    expect(err).toBeInstanceOf(FormatError)
    expect(err.message).toBe('Malformed JSON on line 3 (byte 24): unexpected "}"')
  })

  it('reports a truncated document and trailing garbage', async () => {
    expect((await failure(jsonBatches(chunked(utf8('[{"a":1},{"a":'))))).message).toMatch(/ends in the middle of a value/)
    expect((await failure(jsonBatches(chunked(utf8('[{"a":1}] x'))))).message).toMatch(
      /^Malformed JSON on line 1 .*unexpected "x"/,
    )
    expect((await failure(jsonBatches(chunked(utf8('{"a":1}\n{"a":2,}\n'))))).message).toMatch(/^Malformed JSON on line 2/)
  })

  it('reads an empty file as no records', async () => {
    expect(await records('  \n')).toEqual([])
  })
})
