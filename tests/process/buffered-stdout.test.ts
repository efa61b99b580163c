import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest'
import { bufferedStdout } from '../../src/runtime/node-primitives.ts'

describe('bufferedStdout (the Node entry log writer)', () => {
  let written: string[]
  let spy: MockInstance

  beforeEach(() => {
    vi.useFakeTimers()
    written = []
    spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk))
      return true
    })
  })

  afterEach(() => {
    spy.mockRestore()
    vi.useRealTimers()
  })

  it('writes the lines of the last 100 ms together, in order, one per line', () => {
    const write = bufferedStdout()
    write('{"n":1}')
    write('{"n":2}')
    vi.advanceTimersByTime(99)
    expect(written).toEqual([])
    write('{"n":3}')
    vi.advanceTimersByTime(1)
    expect(written).toEqual(['{"n":1}\n{"n":2}\n{"n":3}\n'])
    vi.advanceTimersByTime(1_000)
    expect(written).toHaveLength(1)
  })

  it('writes at once when 512 lines wait, and starts a new batch after', () => {
    const write = bufferedStdout()
    for (let i = 0; i < 512; i++) write(`{"n":${i}}`)
    expect(written).toHaveLength(1)
    expect(written[0].split('\n')).toHaveLength(513)
    write('{"n":"next"}')
    expect(written).toHaveLength(1)
    vi.advanceTimersByTime(100)
    expect(written[1]).toBe('{"n":"next"}\n')
  })

  it('writes what is waiting when the process exits', () => {
    const write = bufferedStdout()
    write('{"msg":"stopped"}')
    process.emit('exit', 0)
    expect(written).toEqual(['{"msg":"stopped"}\n'])
  })
})
