import { describe, expect, it } from 'vitest'
import { trackInvocation } from '../../src/runtime/workers-invocation.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** An execution context that keeps what it is handed. */
function execution() {
  const kept: Promise<unknown>[] = []
  return { kept, waitUntil: (work: Promise<unknown>) => void kept.push(work) }
}

describe('trackInvocation (Workers)', () => {
  it('settles after the response and the background work it deferred, work deferred meanwhile included', async () => {
    const ctx = execution()
    const inv = trackInvocation(ctx)
    const order: string[] = []
    inv.defer(
      sleep(30).then(() => {
        order.push('sync')
        inv.defer(sleep(30).then(() => order.push('recompute')))
      }),
    )
    const settled = inv.settled().then(() => order.push('settled'))
    await sleep(10)
    expect(order).toEqual([])
    inv.answered()
    await settled
    expect(order).toEqual(['sync', 'recompute', 'settled'])
    expect(ctx.kept).toHaveLength(2)
  })

  it("keeps a pass alive without waiting for it, and ends its signal at the invocation's budget", async () => {
    const ctx = execution()
    const inv = trackInvocation(ctx, 50)
    inv.answered()
    const stopping = await inv.settled()
    inv.waitUntil(sleep(1_000))
    expect(ctx.kept).toHaveLength(1)
    await expect(inv.settled()).resolves.toBeInstanceOf(AbortSignal)
    expect(stopping.aborted).toBe(false)
    await sleep(100)
    expect(stopping.aborted).toBe(true)
  })
})
