import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EgressError } from '../../../src/lib/egress/errors.ts'
import { checkOutboundUrl, createGuardedFetch } from '../../../src/lib/egress/guarded-fetch.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../../helpers/servers.ts'

let server: FixtureServer
let port: number

beforeAll(async () => {
  server = await startJsonServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname === '/loop') return void res.writeHead(302, { location: '/loop' }).end()
    if (url.pathname === '/to-loopback') return void res.writeHead(302, { location: `http://127.0.0.1:${port}/ok` }).end()
    if (url.pathname === '/to-localhost') return void res.writeHead(307, { location: `http://localhost:${port}/ok` }).end()
    if (url.pathname === '/see-other') return void res.writeHead(303, { location: '/ok' }).end()
    sendJson(res, 200, { method: req.method, authorization: req.headers.authorization ?? null, body: req.body })
  })
  port = Number(new URL(server.url).port)
})
afterAll(() => server.close())

/** Sends every request to the loopback fixture whatever its host, as a public host would be reached. */
const toFixture: typeof fetch = (input, init) => {
  const url = new URL(String(input))
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return fetch(url, init)
}
const publicResolver = async (host: string) => (host === 'rebind.test' ? ['10.0.0.5'] : ['93.184.216.34'])

describe('createGuardedFetch', () => {
  it('refuses schemes other than http and https', async () => {
    const guarded = createGuardedFetch({ fetch, allowPrivate: true })
    await expect(guarded('file:///etc/passwd')).rejects.toThrow('Only http and https URLs are allowed, not file')
    await expect(guarded('ftp://example.org/x')).rejects.toThrow(/not ftp/)
  })

  it('refuses loopback, private and link-local literals and localhost without allowPrivate', async () => {
    const guarded = createGuardedFetch({ fetch, allowPrivate: false })
    for (const url of [
      `${server.url}/ok`,
      'http://localhost/x',
      'http://api.localhost/x',
      'http://10.0.0.1/',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0.0.0.0/',
    ]) {
      await expect(guarded(url), url).rejects.toThrow(/Refusing to connect .*private network addresses are not allowed/)
    }
    // Its own error, not a connector's: the guard also serves outbound webhooks.
    await expect(guarded('http://10.0.0.1/')).rejects.toBeInstanceOf(EgressError)
    await expect(checkOutboundUrl(new URL('ftp://example.org/'), { allowPrivate: true })).rejects.toBeInstanceOf(EgressError)
    expect(server.requests).toHaveLength(0)
  })

  it('refuses host names that resolve to private addresses', async () => {
    const guarded = createGuardedFetch({ fetch: toFixture, resolveHost: publicResolver, allowPrivate: false })
    await expect(guarded('http://rebind.test/ok')).rejects.toThrow(
      'Refusing to connect to rebind.test (10.0.0.5): it is a private address',
    )
    const ok = await guarded('http://public.test/ok')
    expect(ok.status).toBe(200)
  })

  it('re-checks every redirect target', async () => {
    const guarded = createGuardedFetch({ fetch: toFixture, resolveHost: publicResolver, allowPrivate: false })
    await expect(guarded('http://public.test/to-loopback')).rejects.toThrow(
      /Refusing to connect to 127\.0\.0\.1: it is a loopback address/,
    )
  })

  it('follows at most 5 redirects', async () => {
    const guarded = createGuardedFetch({ fetch, allowPrivate: true })
    const before = server.requests.length
    await expect(guarded(`${server.url}/loop`)).rejects.toThrow('Too many redirects (more than 5)')
    expect(server.requests.length - before).toBe(6)
  })

  it('drops credentials on a redirect to another origin and turns a 303 into a GET', async () => {
    const guarded = createGuardedFetch({ fetch, allowPrivate: true })
    const cross = await guarded(`${server.url}/to-localhost`, { headers: { Authorization: 'Bearer x' } })
    expect(await cross.json()).toMatchObject({ method: 'GET', authorization: null })
    const same = await guarded(`${server.url}/see-other`, {
      method: 'POST',
      body: '{"a":1}',
      headers: { Authorization: 'Bearer x' },
    })
    expect(await same.json()).toEqual({ method: 'GET', authorization: 'Bearer x', body: '' })
  })
})
