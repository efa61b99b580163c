import { describe, expect, it } from 'vitest'
import { FingerprintSet, keyRecords, newKeySet } from '../../../src/rowstore/records.ts'
import { sha256Hex } from '../../../src/runtime/node-crypto.ts'

describe('FingerprintSet', () => {
  it('answers true for new fingerprints and false for repeats, across growth', () => {
    const set = new FingerprintSet()
    const values = Array.from({ length: 20_000 }, (_, i) => (i * 2654435761 + 1) % 2 ** 32)
    for (const v of values) expect(set.add(v)).toBe(true)
    for (const v of values) expect(set.add(v)).toBe(false)
    expect(set.add(2 ** 32 - 1)).toBe(!values.includes(2 ** 32 - 1))
  })
})

describe('keyRecords', () => {
  it('keys keyless records by a 128-bit content hash, numbering repeats, the same with and without a runtime digest', async () => {
    const records = [{ data: { a: 1 } }, { data: { a: 2 } }, { data: { a: 1 } }, { data: { a: 1 } }]
    const withDigest = await keyRecords(records, undefined, newKeySet(), sha256Hex)
    const withWebCrypto = await keyRecords(records, undefined, newKeySet(), undefined)
    const first = sha256Hex(JSON.stringify({ a: 1 })).slice(0, 32)
    expect(withDigest.map((r) => r.key)).toEqual([
      first,
      sha256Hex(JSON.stringify({ a: 2 })).slice(0, 32),
      `${first}#2`,
      `${first}#3`,
    ])
    expect(withWebCrypto.map((r) => r.key)).toEqual(withDigest.map((r) => r.key))
  })

  it('prefers the keyField value, then the connector key', async () => {
    const keyed = await keyRecords(
      [
        { key: 'Patient/1', data: { id: 'x' } },
        { key: 'Patient/2', data: {} },
      ],
      'id',
      newKeySet(),
      sha256Hex,
    )
    expect(keyed.map((r) => r.key)).toEqual(['x', 'Patient/2'])
  })
})
