import { describe, expect, it } from 'vitest'
import { trackBackgroundWork } from '../../src/lib/background.ts'
import { createLogger } from '../../src/lib/logger.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function tracker() {
  const lines: Record<string, unknown>[] = []
  const work = trackBackgroundWork(createLogger('info', (line) => lines.push(JSON.parse(line))))
  return { work, lines }
}

describe('trackBackgroundWork', () => {
  it('tracks deferred work until it settles, and settle waits for it', async () => {
    const { work } = tracker()
    let done = false
    work.defer(
      sleep(50).then(() => {
        done = true
      }),
      { what: 'job' },
    )
    expect(work.pending()).toBe(1)
    expect(await work.settle({ waitMs: 2_000, graceMs: 100 })).toEqual({ finished: 1, handedBack: 0, abandoned: 0 })
    expect(done).toBe(true)
    expect(work.pending()).toBe(0)
    expect(work.stopping.aborted).toBe(false)
  })

  it('logs a failure with its job instead of rejecting', async () => {
    const { work, lines } = tracker()
    work.defer(Promise.reject(new Error('boom')), { what: 'sync', runId: 7 })
    expect(await work.settle({ waitMs: 1_000, graceMs: 0 })).toMatchObject({ finished: 1 })
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'error', msg: 'background work failed', what: 'sync', runId: 7, error: 'boom' }),
    )
  })

  it('also waits for work deferred while it settles', async () => {
    const { work } = tracker()
    let second = false
    work.defer(
      sleep(30).then(() =>
        work.defer(
          sleep(30).then(() => {
            second = true
          }),
          { what: 'follow-up' },
        ),
      ),
      { what: 'first' },
    )
    expect(await work.settle({ waitMs: 2_000, graceMs: 0 })).toEqual({ finished: 2, handedBack: 0, abandoned: 0 })
    expect(second).toBe(true)
  })

  it('at the end of waitMs aborts `stopping`, then counts what handed back and what did not', async () => {
    const { work, lines } = tracker()
    const handsBack = new Promise<void>((resolve) => work.stopping.addEventListener('abort', () => resolve()))
    work.defer(handsBack, { what: 'polite' })
    work.defer(new Promise(() => {}), { what: 'stuck' })
    const started = Date.now()
    const report = await work.settle({ waitMs: 100, graceMs: 100 })
    const took = Date.now() - started
    expect(report).toEqual({ finished: 0, handedBack: 1, abandoned: 1 })
    expect(work.stopping.aborted).toBe(true)
    expect(took).toBeGreaterThanOrEqual(190)
    expect(took).toBeLessThan(1_000)
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'handing back background work', count: 2, jobs: ['polite', 'stuck'] }),
    )
  })
})
