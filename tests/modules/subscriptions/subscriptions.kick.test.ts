import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Deps } from '../../../src/deps.ts'
import { deliverAfterCommits, type Invocation } from '../../../src/modules/subscriptions/subscriptions.kick.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import type { FixtureServer } from '../../helpers/servers.ts'
import { bodies, emit, sameDatabaseInstance, startReceiver, step } from './fixtures.ts'

/**
 * The deliveries after one invocation's commits (`deliverAfterCommits`: what a Workers request
 * runs, docs/live.md "Where deliveries run"), driven here with an invocation of the test's own:
 * its writes end when the test says so. The deps are another instance's on the same database, so no
 * watch of the app's own process sends anything (on every target).
 */

let t: TestApp
let alice: TestClient
let panelId: number
let r: FixtureServer

beforeAll(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'Ward', tenantId: 'tenant-a', userId: 'alice' })).body.id
  r = await startReceiver()
  const sub = await alice.post('/api/subscriptions', { url: `${r.url}/hook`, events: ['*'], panelId })
  expect(sub.status).toBe(201)
})
afterAll(async () => {
  await r.close()
})

/** An invocation whose writes are done at `finish(signal)`; `passes` holds what it kept alive. */
function invocation() {
  let finish!: (stopping: AbortSignal) => void
  const done = new Promise<AbortSignal>((resolve) => {
    finish = resolve
  })
  const passes: Promise<unknown>[] = []
  const inv: Invocation = { settled: () => done, waitUntil: (work) => passes.push(work) }
  return { inv, passes, finish }
}

/** Another instance's deps whose database calls are counted. */
async function countedInstance(): Promise<{ deps: Deps; calls: () => number }> {
  const deps = await sameDatabaseInstance(t)
  let calls = 0
  const db = new Proxy(deps.db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        calls++
        return value.apply(target, args)
      }
    },
  })
  return { deps: { ...deps, db }, calls: () => calls }
}

const rowsChanged = (n: number) => ({ type: 'panel.rows_changed' as const, panelId, data: { n } })

describe('deliverAfterCommits', () => {
  it("runs one pass per tenant, once the invocation's writes are done, and sends what they committed", async () => {
    const deps = await sameDatabaseInstance(t)
    const { inv, passes, finish } = invocation()
    deliverAfterCommits(deps, inv)
    const sent = r.requests.length
    await emit(deps, 'tenant-a', [rowsChanged(1)])
    deps.live.committed('tenant-a')
    await emit(deps, 'tenant-a', [rowsChanged(2)])
    deps.live.committed('tenant-a')
    expect(passes).toHaveLength(1)
    finish(new AbortController().signal)
    await Promise.all(passes)
    const got = bodies(r).slice(sent)
    expect(got.map((b) => b.data.n)).toEqual([1, 2])
    // A later commit of the same invocation is left to the next pass or step: bounded per invocation.
    await emit(deps, 'tenant-a', [rowsChanged(3)])
    deps.live.committed('tenant-a')
    expect(passes).toHaveLength(1)
    expect(r.requests).toHaveLength(sent + 2)
    expect((await step(deps)).delivered).toBe(1)
  })

  it('costs a tenant without active subscriptions one query, after its writes', async () => {
    const { deps, calls } = await countedInstance()
    const { inv, passes, finish } = invocation()
    deliverAfterCommits(deps, inv)
    deps.live.committed('tenant-b')
    deps.live.committed('tenant-b')
    expect(calls()).toBe(0)
    finish(new AbortController().signal)
    await Promise.all(passes)
    expect(calls()).toBe(1)
  })

  it('sends nothing once the invocation is about to end, and leaves the lease free for the next runner', async () => {
    const deps = await sameDatabaseInstance(t)
    const { inv, passes, finish } = invocation()
    deliverAfterCommits(deps, inv)
    const sent = r.requests.length
    await emit(deps, 'tenant-a', [rowsChanged(4)])
    deps.live.committed('tenant-a')
    finish(AbortSignal.abort())
    await Promise.all(passes)
    expect(r.requests).toHaveLength(sent)
    expect((await step(deps)).delivered).toBe(1)
    expect(bodies(r).at(-1).data.n).toBe(4)
  })
})
