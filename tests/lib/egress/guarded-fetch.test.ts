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

describe('createGuardedFetch: redirects to another origin', () => {
  // Two loopback servers on different ports are two origins: 127.0.0.1:A and 127.0.0.1:B.
  let origin: FixtureServer
  let other: FixtureServer

  beforeAll(async () => {
    const redirect = (res: Parameters<Parameters<typeof startJsonServer>[0]>[1], status: number, location: string) =>
      void res.writeHead(status, { location }).end()
    origin = await startJsonServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      const status = Number(url.searchParams.get('status') ?? 302)
      if (url.pathname === '/to-other') return redirect(res, status, `${other.url}/echo`)
      if (url.pathname === '/to-other-and-back') return redirect(res, status, `${other.url}/back`)
      if (url.pathname === '/same') return redirect(res, status, '/echo')
      if (url.pathname === '/to-http') return redirect(res, status, `${origin.url}/echo`)
      sendJson(res, 200, { ok: true })
    })
    other = await startJsonServer((req, res) => {
      if (req.url === '/back') return redirect(res, 302, `${origin.url}/echo`)
      sendJson(res, 200, { ok: true })
    })
  })
  afterAll(() => Promise.all([origin.close(), other.close()]))

  const guarded = createGuardedFetch({ fetch, allowPrivate: true })
  const sourceHeaders = {
    Accept: 'application/fhir+json',
    Prefer: 'respond-async',
    'User-Agent': 'panels-test',
    Authorization: 'Bearer tok-1',
    'X-API-Key': 'key-1',
    'X-Custom-Key': 'key-2',
    Cookie: 'session=s',
  }
  const lastHeaders = (server: FixtureServer) => server.requests.at(-1)?.headers ?? {}
  const safeOnly = { accept: 'application/fhir+json', prefer: 'respond-async', 'user-agent': 'panels-test' }
  const credentials = ['authorization', 'x-api-key', 'x-custom-key', 'cookie']

  for (const status of [302, 307]) {
    it(`sends no credential header, custom names included, to another origin after a ${status}`, async () => {
      const res = await guarded(`${origin.url}/to-other?status=${status}`, { headers: sourceHeaders })
      expect(res.status).toBe(200)
      expect(lastHeaders(origin)).toMatchObject({ authorization: 'Bearer tok-1', 'x-api-key': 'key-1' })
      expect(lastHeaders(other)).toMatchObject(safeOnly)
      for (const name of credentials) expect(lastHeaders(other), name).not.toHaveProperty(name)
    })
  }

  it('keeps every header on a redirect within the origin', async () => {
    await guarded(`${origin.url}/same?status=307`, { headers: sourceHeaders })
    expect(origin.requests.at(-1)?.url).toBe('/echo')
    expect(lastHeaders(origin)).toMatchObject({ ...safeOnly, authorization: 'Bearer tok-1', 'x-api-key': 'key-1' })
  })

  it('does not give the credentials back when a later redirect returns to the first origin', async () => {
    await guarded(`${origin.url}/to-other-and-back`, { headers: sourceHeaders })
    expect(origin.requests.at(-1)?.url).toBe('/echo')
    expect(lastHeaders(origin)).toMatchObject(safeOnly)
    for (const name of credentials) expect(lastHeaders(origin), name).not.toHaveProperty(name)
  })

  it('treats a redirect from https to http on the same host and port as another origin', async () => {
    // The fixture speaks plain HTTP: the first request is sent there as if https had been.
    const httpsToFixture: typeof fetch = (input, init) => fetch(String(input).replace(/^https:/, 'http:'), init)
    const downgrade = createGuardedFetch({ fetch: httpsToFixture, allowPrivate: true })
    await downgrade(`${origin.url.replace(/^http:/, 'https:')}/to-http`, { headers: sourceHeaders })
    expect(origin.requests.at(-1)?.url).toBe('/echo')
    for (const name of credentials) expect(lastHeaders(origin), name).not.toHaveProperty(name)
  })

  it('refuses to resend a request body to another origin, and follows a 302 that turns it into a GET', async () => {
    const before = other.requests.length
    for (const status of [307, 308]) {
      await expect(
        guarded(`${origin.url}/to-other?status=${status}`, {
          method: 'POST',
          body: 'client_secret=s3cret',
          headers: sourceHeaders,
        }),
      ).rejects.toThrow(
        new EgressError(`Refusing to resend the request body to another origin (a ${status} redirect to ${other.url})`),
      )
    }
    expect(other.requests.length - before).toBe(0)
    const res = await guarded(`${origin.url}/to-other?status=302`, { method: 'POST', body: 'a=1', headers: sourceHeaders })
    expect(res.status).toBe(200)
    expect(other.requests.at(-1)).toMatchObject({ method: 'GET', body: '' })
  })
})
