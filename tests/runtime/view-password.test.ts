import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, type Service, SMOKE_SECRET, startNodeFromSource, startService, waitFor, waitForHealth } from './processes.ts'
import { bearer } from './smoke.ts'

/**
 * The password limit of a shared view under concurrency (issue 20; docs/view-sharing.md): two real
 * Node servers on one libSQL file (and one Redis as their shared cache when redis-server is
 * installed). 50 wrong guesses sent at once are checked at most 5 times, the rest answered 429;
 * the other instance sees the same count; requests without a password count as nothing.
 */

const TENANT = 'locked'
const PASSWORD = 'correct horse'

function onPath(bin: string): boolean {
  try {
    return execFileSync('which', [bin], { encoding: 'utf8' }).trim() !== ''
  } catch {
    return false
  }
}
const withRedis = onPath('redis-server')
if (!withRedis) console.warn('view-password.test.ts: redis-server is not on PATH; the two instances run without a shared cache')

interface Answer {
  status: number
  code?: string
  retryAfter: string | null
}

describe(`two Node instances on one database${withRedis ? ' with Redis' : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'view-password-'))
  const services: Service[] = []
  let a = ''
  let b = ''
  let viewId = 0

  beforeAll(async () => {
    const extra: Record<string, string> = {}
    if (withRedis) {
      const redisPort = await freePort()
      const redis = startService(
        'redis-server',
        ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { cwd: tmpdir(), env: {} },
      )
      services.push(redis)
      await waitFor(10_000, 'redis-server', () => (redis.output().includes('Ready to accept connections') ? true : undefined))
      extra.REDIS_URL = `redis://127.0.0.1:${redisPort}`
    }
    const [portA, portB] = [await freePort(), await freePort()]
    a = `http://127.0.0.1:${portA}`
    b = `http://127.0.0.1:${portB}`
    const first = startNodeFromSource(dir, portA, extra)
    services.push(first)
    await waitForHealth(first, a, 120_000)
    const second = startNodeFromSource(dir, portB, extra)
    services.push(second)
    await waitForHealth(second, b, 120_000)

    const alice = await bearer(SMOKE_SECRET, TENANT, 'alice')
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${a}${path}`, { method: 'POST', headers: alice, body: JSON.stringify(body) })
      expect(res.status, await res.clone().text()).toBeLessThan(300)
      return (await res.json()) as { id: number }
    }
    const panel = await post('/api/panels', { name: 'Ward', tenantId: TENANT, userId: 'alice' })
    viewId = (await post('/api/views', { name: 'Locked list', panelId: panel.id })).id
    await post(`/api/views/${viewId}/publish`, {
      publishConfig: { permissions: ['read'], userGroups: [], passwordProtected: true, password: PASSWORD },
    })
  }, 300_000)

  afterAll(async () => {
    for (const s of services.reverse()) await s.stop(2_000)
    rmSync(dir, { recursive: true, force: true })
  })

  /** GET the view on `base` as `user`, with `password` in X-View-Password unless undefined. */
  async function open(base: string, user: string, password?: string): Promise<Answer> {
    const headers: Record<string, string> = await bearer(SMOKE_SECRET, TENANT, user)
    if (password !== undefined) headers['x-view-password'] = password
    const res = await fetch(`${base}/api/views/${viewId}`, { headers, signal: AbortSignal.timeout(60_000) })
    const body = (await res.json()) as { code?: string }
    return { status: res.status, code: body.code, retryAfter: res.headers.get('retry-after') }
  }

  const tally = (answers: Answer[]) => ({
    invalid: answers.filter((x) => x.status === 403 && x.code === 'VIEW_PASSWORD_INVALID').length,
    limited: answers.filter((x) => x.status === 429 && x.code === 'RATE_LIMITED' && Number(x.retryAfter) > 0).length,
  })

  it('checks at most 5 of 50 wrong guesses sent at once to one server, answers the rest 429, and the other server sees the count', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => open(a, 'nina', `guess ${i}`)))
    console.info('50 parallel wrong guesses on one instance:', tally(answers))
    expect(tally(answers)).toEqual({ invalid: 5, limited: 45 })
    const onB = await open(b, 'nina', PASSWORD)
    expect(onB.status).toBe(429)
    expect(Number(onB.retryAfter)).toBeGreaterThan(0)
  })

  it('holds across the two servers when the guesses are split between them', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => open(i % 2 ? a : b, 'bob', `guess ${i}`)))
    console.info('50 parallel wrong guesses split over two instances:', tally(answers))
    expect(tally(answers)).toEqual({ invalid: 5, limited: 45 })
    expect((await open(a, 'bob', PASSWORD)).status).toBe(429)
  })

  it('does not count requests that send no password, on either server', async () => {
    const asked = await Promise.all(Array.from({ length: 12 }, (_, i) => open(i % 2 ? a : b, 'carol')))
    expect(asked.map((x) => `${x.status} ${x.code}`)).toEqual(Array(12).fill('403 VIEW_PASSWORD_REQUIRED'))
    expect((await open(b, 'carol', 'one typo')).code).toBe('VIEW_PASSWORD_INVALID')
    expect((await open(b, 'carol', PASSWORD)).status).toBe(200)
    expect((await open(a, 'carol', PASSWORD)).status).toBe(200)
  })
})
