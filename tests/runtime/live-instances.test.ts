import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, type Service, SMOKE_SECRET, startNodeFromSource, startService, waitFor, waitForHealth } from './processes.ts'
import { bearer } from './smoke.ts'

/**
 * The scale-out deployment (docs/live.md "Several instances"): two Node processes on one libSQL
 * file. A stream on instance A receives an event committed through instance B — a real write
 * (renaming a view emits `view.updated`) — woken through Redis (pub/sub) well within a second, and
 * without Redis by polling the log (≤ 1 s); with Redis as the shared cache, a view A cached is read
 * anew after B renames it. Loopback only; processes and files are removed after.
 */

const ROUNDS = 5

function startRedis(port: number): Service {
  return startService('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    cwd: tmpdir(),
    env: {},
  })
}

/** Reads an SSE response, calling `onEvent` with each data frame's event and the time it arrived. */
function readFrames(
  res: Response,
  onEvent: (e: { seq: number; type: string; data: Record<string, unknown> }, at: number) => void,
) {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  return (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        buffer += decoder.decode(value, { stream: true })
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          const frame = buffer.slice(0, at)
          buffer = buffer.slice(at + 2)
          const data = frame.split('\n').find((l) => l.startsWith('data: '))
          if (data) onEvent(JSON.parse(data.slice(6)), performance.now())
        }
      }
    } catch {
      // aborted
    }
  })()
}

describe.each([
  ['with Redis', true, 300],
  ['without Redis (polling)', false, 1_500],
])('two instances on one database %s', (_name, withRedis, boundMs) => {
  const dir = mkdtempSync(join(tmpdir(), 'live-instances-'))
  const services: Service[] = []
  afterAll(async () => {
    for (const s of services.reverse()) await s.stop(2_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it(`a commit through B reaches a stream on A within ${boundMs} ms`, async () => {
    const extra: Record<string, string> = { EVENTS_POLL_INTERVAL_MS: '1000' }
    if (withRedis) {
      const redisPort = await freePort()
      const redis = startRedis(redisPort)
      services.push(redis)
      await waitFor(10_000, 'redis-server', () => (redis.output().includes('Ready to accept connections') ? true : undefined))
      extra.REDIS_URL = `redis://127.0.0.1:${redisPort}`
    }
    const [portA, portB] = [await freePort(), await freePort()]
    const a = startNodeFromSource(dir, portA, extra)
    services.push(a)
    await waitForHealth(a, `http://127.0.0.1:${portA}`, 120_000)
    const b = startNodeFromSource(dir, portB, extra)
    services.push(b)
    await waitForHealth(b, `http://127.0.0.1:${portB}`, 120_000)

    const headers = { ...(await bearer(SMOKE_SECRET, 'live', 'alice')), 'content-type': 'application/json' }
    const post = async (base: string, path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
      expect(res.status, await res.clone().text()).toBe(201)
      return (await res.json()) as { id: number }
    }
    const panel = await post(`http://127.0.0.1:${portB}`, '/api/panels', { name: 'Live', tenantId: 'live', userId: 'alice' })
    const view = await post(`http://127.0.0.1:${portB}`, '/api/views', { name: 'v0', panelId: panel.id })

    const abort = new AbortController()
    const stream = await fetch(`http://127.0.0.1:${portA}/api/views/${view.id}/events`, {
      headers: { ...headers, accept: 'text/event-stream' },
      signal: abort.signal,
    })
    expect(stream.status).toBe(200)
    const arrived = new Map<string, number>()
    const reading = readFrames(stream, (e, at) => arrived.set(String((e.data.view as { name: string }).name), at))
    // Let A's feed start (it reads the head on the first stream).
    await new Promise((r) => setTimeout(r, 300))

    const latencies: number[] = []
    for (let i = 1; i <= ROUNDS; i++) {
      const name = `v${i}`
      const res = await fetch(`http://127.0.0.1:${portB}/api/views/${view.id}`, {
        method: 'PUT',
        headers,
        body: JSON.stringify({ name }),
      })
      expect(res.status).toBe(200)
      const committed = performance.now()
      await waitFor(5_000, `view.updated "${name}" on A`, () => (arrived.has(name) ? true : undefined))
      latencies.push(arrived.get(name)! - committed)
      // Off the poll's rhythm, so a poll cannot pass for a wake-up round after round.
      await new Promise((r) => setTimeout(r, 137 + i * 71))
    }
    abort.abort()
    await reading
    console.info(
      `live instances ${_name}: commit → stream on the other instance (ms)`,
      latencies.map((l) => Math.round(l)),
    )
    for (const l of latencies) expect(l).toBeLessThan(boundMs)
    if (!withRedis) return
    // The shared cache: a view A has cached, renamed through B, is read anew on A (never hidden
    // by what A cached before B's write).
    const nameOn = async (port: number) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/views/${view.id}`, { headers })
      return ((await res.json()) as { name: string }).name
    }
    expect(await nameOn(portA)).toBe(`v${ROUNDS}`)
    expect(await nameOn(portA)).toBe(`v${ROUNDS}`)
    const renamed = await fetch(`http://127.0.0.1:${portB}/api/views/${view.id}`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ name: 'renamed on B' }),
    })
    expect(renamed.status).toBe(200)
    expect(await nameOn(portA)).toBe('renamed on B')
  })
})
