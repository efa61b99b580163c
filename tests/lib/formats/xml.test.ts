import { describe, expect, it } from 'vitest'
import { FormatError } from '../../../src/lib/formats/errors.ts'
import { xmlBatches, xmlRecords } from '../../../src/lib/formats/xml.ts'
import { chunked, collect, failure, utf8 } from './helpers.ts'

const PATIENTS = `<?xml version="1.0" encoding="UTF-8"?>
<patients exported="2026-01-01">
  <patient id="p1"><name>Ada</name><zip>00123</zip></patient>
  <patient id="p2"><name>Grace</name><note lang="en">VIP &amp; donor</note></patient>
</patients>`

describe('xmlRecords', () => {
  it('takes the repeated children of the root, keeping attributes with @ and values as text', () => {
    expect(xmlRecords(PATIENTS)).toEqual([
      { '@id': 'p1', name: 'Ada', zip: '00123' },
      { '@id': 'p2', name: 'Grace', note: { '#text': 'VIP & donor', '@lang': 'en' } },
    ])
  })

  it('takes a single child of the root as one record', () => {
    expect(xmlRecords('<patients><patient id="p1"><name>Ada</name></patient></patients>')).toEqual([{ '@id': 'p1', name: 'Ada' }])
  })

  it('takes the elements at recordPath', () => {
    const doc =
      '<bundle><meta><count>2</count></meta><entries><entry><id>1</id></entry><entry><id>2</id></entry></entries></bundle>'
    expect(xmlRecords(doc, { recordPath: 'bundle.entries.entry' })).toEqual([{ id: '1' }, { id: '2' }])
    expect(() => xmlRecords(doc, { recordPath: '$.bundle.nothing' })).toThrow('Record path "$.bundle.nothing" matches nothing')
  })

  it('asks for a path when the root has no single repeated child', () => {
    expect(() => xmlRecords('<r><a>1</a><b>2</b></r>')).toThrow(/no repeated child elements \(a, b\); set jsonPath/)
  })

  it('names the line and column of malformed XML', () => {
    let err: unknown
    try {
      xmlRecords('<r>\n<a>1</a>\n<b></r>')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(FormatError)
    expect((err as Error).message).toMatch(/^Malformed XML on line 3, column \d+: .*closing tag/)
  })
})

describe('xmlBatches', () => {
  it('decodes the file and yields batches', async () => {
    const batches = await collect(xmlBatches(chunked(utf8(PATIENTS)), { batchSize: 1 }))
    expect(batches.map((b) => b[0]['@id'])).toEqual(['p1', 'p2'])
  })

  it('refuses a document over the size bound instead of truncating it', async () => {
    const err = await failure(xmlBatches(chunked(utf8(PATIENTS)), { maxChars: 100 }))
    expect(err.message).toMatch(/XML files are read whole and this one is larger than/)
  })
})
