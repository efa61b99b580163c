import { afterEach, describe, expect, it } from 'vitest'
import { tuneHeap } from '../../src/runtime/node-heap.ts'

const options = process.env.NODE_OPTIONS

describe('tuneHeap (the Node entry)', () => {
  afterEach(() => {
    if (options === undefined) delete process.env.NODE_OPTIONS
    else process.env.NODE_OPTIONS = options
  })

  it("leaves an operator's own --heap-growing-percent as given, on the command line or in NODE_OPTIONS", () => {
    expect(tuneHeap(['--heap-growing-percent=20'])).toBe(false)
    expect(tuneHeap(['--heap_growing_percent=20'])).toBe(false)
    process.env.NODE_OPTIONS = '--max-semi-space-size=8 --heap-growing-percent=25'
    expect(tuneHeap([])).toBe(false)
  })

  it('sets the growing percent otherwise', () => {
    delete process.env.NODE_OPTIONS
    expect(tuneHeap(['--enable-source-maps'])).toBe(true)
  })
})
