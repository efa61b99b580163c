import { describe, expect, it } from 'vitest'
import {
  abortableSleep,
  backoffDelay,
  MAX_RETRY_WAIT_MS,
  parseRetryAfter,
  RetryableError,
  withRetry,
} from '../../src/connectors/shared/retry.ts'
import { ConnectorError } from '../../src/connectors/types.ts'

/** A run that fails with `errors` in turn, then answers 'ok'; counts its calls. */
function failing(...errors: Error[]) {
  const state = { calls: 0 }
  const run = async () => {
    const err = errors[state.calls++]
    if (err) throw err
    return 'ok'
  }
  return { run, state }
}

const recordSleeps = () => {
  const waits: number[] = []
  return { waits, sleep: async (ms: number) => void waits.push(ms) }
}

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates', () => {
    const now = Date.parse('2026-01-01T12:00:00Z')
    expect(parseRetryAfter('3', now)).toBe(3000)
    expect(parseRetryAfter(' 0 ', now)).toBe(0)
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:05 GMT', now)).toBe(5000)
    expect(parseRetryAfter('Thu, 01 Jan 2026 11:00:00 GMT', now)).toBe(0)
  })

  it('ignores absent or unreadable values', () => {
    expect(parseRetryAfter(null)).toBeUndefined()
    expect(parseRetryAfter('soon')).toBeUndefined()
    expect(parseRetryAfter('-5')).toBeUndefined()
    expect(parseRetryAfter('1.5')).toBeUndefined()
  })
})

describe('backoffDelay', () => {
  it('draws a full-jitter wait below base · 2^attempt, capped', () => {
    expect(backoffDelay(0, 100, () => 0.5)).toBe(50)
    expect(backoffDelay(3, 100, () => 0.5)).toBe(400)
    expect(backoffDelay(3, 100, () => 0)).toBe(0)
    expect(backoffDelay(3, 100, () => 0.999)).toBeLessThan(800)
    expect(backoffDelay(30, 500, () => 0.5, 10_000)).toBe(5000)
  })
})

describe('withRetry', () => {
  const signal = new AbortController().signal

  it('retries retryable failures with exponential jittered waits until one succeeds', async () => {
    const { run, state } = failing(new RetryableError('503'), new RetryableError('503'), new RetryableError('503'))
    const { waits, sleep } = recordSleeps()
    const result = await withRetry(run, { attempts: 3, delayMs: 100, signal, sleep, random: () => 0.5 })
    expect(result).toBe('ok')
    expect(state.calls).toBe(4)
    expect(waits).toEqual([50, 100, 200])
  })

  it('waits what Retry-After asks, capped', async () => {
    const { run } = failing(new RetryableError('429', 2000), new RetryableError('429', 10 * 60_000))
    const { waits, sleep } = recordSleeps()
    await withRetry(run, { attempts: 2, delayMs: 100, signal, sleep, random: () => 0.5 })
    expect(waits).toEqual([2000, MAX_RETRY_WAIT_MS])
  })

  it('gives up after the configured attempts, saying how many tries were made', async () => {
    const { run, state } = failing(
      ...Array.from({ length: 5 }, () => new RetryableError('API responded 503 Service Unavailable')),
    )
    const { sleep } = recordSleeps()
    await expect(withRetry(run, { attempts: 2, delayMs: 1, signal, sleep })).rejects.toThrow(
      'API responded 503 Service Unavailable (gave up after 3 attempts)',
    )
    expect(state.calls).toBe(3)
  })

  it('does not retry other failures, and not at all with 0 attempts', async () => {
    const { sleep, waits } = recordSleeps()
    const a = failing(new ConnectorError('API responded 404 Not Found'))
    await expect(withRetry(a.run, { attempts: 5, delayMs: 1, signal, sleep })).rejects.toThrow('404 Not Found')
    const b = failing(new TypeError('boom'))
    await expect(withRetry(b.run, { attempts: 5, delayMs: 1, signal, sleep })).rejects.toThrow('boom')
    const c = failing(new RetryableError('API responded 502 Bad Gateway'))
    await expect(withRetry(c.run, { attempts: 0, delayMs: 1, signal, sleep })).rejects.toThrow(/^API responded 502 Bad Gateway$/)
    expect([a.state.calls, b.state.calls, c.state.calls, waits.length]).toEqual([1, 1, 1, 0])
  })

  it('stops waiting at once when aborted, and never retries after an abort', async () => {
    const controller = new AbortController()
    const { run, state } = failing(new RetryableError('503', 5000), new RetryableError('503'))
    const started = Date.now()
    setTimeout(() => controller.abort(new DOMException('timed out', 'TimeoutError')), 30)
    await expect(withRetry(run, { attempts: 5, delayMs: 1, signal: controller.signal })).rejects.toMatchObject({
      name: 'TimeoutError',
    })
    expect(Date.now() - started).toBeLessThan(2000)
    expect(state.calls).toBe(1)
  })
})

describe('abortableSleep', () => {
  it('resolves after the wait, or rejects at once on an aborted signal', async () => {
    await expect(abortableSleep(5, new AbortController().signal)).resolves.toBeUndefined()
    await expect(abortableSleep(10_000, AbortSignal.abort(new Error('stop')))).rejects.toThrow('stop')
  })
})
