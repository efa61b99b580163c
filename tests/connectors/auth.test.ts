import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import api from '../../src/connectors/api.ts'
import type { ConnectorContext } from '../../src/connectors/types.ts'
import { startPagedApi } from '../helpers/api-server.ts'
import { readAllBatches, testConnectorContext } from '../helpers/connectors.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../helpers/servers.ts'

let fixture: Awaited<ReturnType<typeof startPagedApi>>
let base: string

beforeAll(async () => {
  fixture = await startPagedApi()
  base = fixture.server.url
})
afterAll(() => fixture.close())

const read = (config: Record<string, unknown>, overrides: Partial<ConnectorContext> = {}) =>
  readAllBatches(api, config, overrides)

describe('api authentication: bearer, basic, api-key', () => {
  it('sends a bearer token', async () => {
    const { records } = await read({ apiEndpoint: `${base}/bearer`, authentication: { type: 'bearer', token: 'tok-123' } })
    expect(records).toHaveLength(3)
  })

  it('sends basic credentials (UTF-8)', async () => {
    const { records } = await read({
      apiEndpoint: `${base}/basic`,
      authentication: { type: 'basic', username: 'ada', password: 'pässword' },
    })
    expect(records).toHaveLength(3)
  })

  it('sends an API key in X-API-Key, or in the header named by apiKeyHeader', async () => {
    const plain = await read({ apiEndpoint: `${base}/key`, authentication: { type: 'api-key', apiKey: 'key-1' } })
    expect(plain.records).toHaveLength(3)
    const named = await read({
      apiEndpoint: `${base}/key?header=X-Custom-Key`,
      authentication: { type: 'api-key', apiKey: 'key-1', apiKeyHeader: 'X-Custom-Key' },
    })
    expect(named.records).toHaveLength(3)
    await expect(read({ apiEndpoint: `${base}/key`, authentication: { type: 'api-key', apiKey: 'wrong' } })).rejects.toThrow(
      'API responded 403 Forbidden: no key',
    )
  })

  it('never shows a secret in an error message, even when the server echoes it', async () => {
    const err = await read({ apiEndpoint: `${base}/bearer`, authentication: { type: 'bearer', token: 'wrong-token' } }).catch(
      (e: Error) => e,
    )
    expect((err as Error).message).toBe('API responded 401 Unauthorized: bad credentials: Bearer <SECRET>')
  })
})

describe('api authentication: oauth2 client credentials', () => {
  let now: number
  let ctx: Partial<ConnectorContext>
  const oauth = (extra: Record<string, unknown> = {}) => ({
    apiEndpoint: `${base}/oauth/items`,
    paginationStyle: 'page',
    authentication: {
      type: 'oauth2',
      clientId: 'cid',
      clientSecret: 'csecret',
      tokenUrl: `${base}/token`,
      scope: 'read',
      ...extra,
    },
  })

  beforeEach(() => {
    now = Date.parse('2026-01-01T12:00:00Z')
    fixture.state.now = () => now
    fixture.state.tokens.length = 0
    fixture.state.expiresIn = 3600
    fixture.state.revoked.clear()
    fixture.state.onOauthPage = undefined
    // One cache shared by the reads of a test, as the per-source cache is shared by its syncs.
    ctx = { cache: testConnectorContext().cache, now: () => new Date(now) }
  })

  it('gets a token with the client credentials and scope, and caches it across syncs', async () => {
    const first = await read(oauth(), ctx)
    expect(first.records).toHaveLength(250)
    const tokenRequest = fixture.server.requests.find((r) => r.url === '/token')
    expect(new URLSearchParams(tokenRequest?.body).get('scope')).toBe('read')
    await read(oauth(), ctx)
    expect(fixture.state.tokens.map((t) => t.token)).toEqual(['tok-1'])
  })

  it('sends the client credentials in the body with client_secret_post', async () => {
    await expect(read(oauth({ tokenAuthMethod: 'client_secret_post' }), ctx)).rejects.toThrow(
      'OAuth2 token endpoint responded 401 Unauthorized',
    )
    const posted = await read(oauth({ tokenAuthMethod: 'client_secret_post', tokenUrl: `${base}/token?post=1` }), ctx)
    expect(posted.records).toHaveLength(250)
    const form = new URLSearchParams(fixture.server.requests.findLast((r) => r.url === '/token?post=1')?.body)
    expect(form.get('client_id')).toBe('cid')
  })

  it('gets a new token once the cached one is about to expire, and never sends an expired one', async () => {
    fixture.state.expiresIn = 60
    await read(oauth(), ctx)
    now += 30_000
    await read(oauth(), ctx)
    expect(fixture.state.tokens).toHaveLength(1)
    now += 25_000 // 55 s of 60: inside the refresh margin
    await read(oauth(), ctx)
    expect(fixture.state.tokens).toHaveLength(2)
    now += 2 * 3600_000
    await read(oauth(), ctx)
    expect(fixture.state.tokens).toHaveLength(3)
  })

  it('refreshes the token half-way through a long read when it expires', async () => {
    fixture.state.expiresIn = 60
    fixture.state.onOauthPage = (page) => {
      if (page === 2) now += 120_000
    }
    const before = fixture.server.requests.length
    const { records } = await read(oauth(), ctx)
    expect(records).toHaveLength(250)
    expect(fixture.state.tokens).toHaveLength(2)
    // Exactly one request per page: no token was refused (sent expired) along the way.
    const pages = fixture.server.requests.slice(before).filter((r) => r.url.startsWith('/oauth/items'))
    expect(pages.map((r) => r.headers.authorization)).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2'])
  })

  it('refreshes once when the API refuses a cached token, and fails clearly when the new one is refused too', async () => {
    await read(oauth(), ctx)
    fixture.state.revoked.add('tok-1')
    const { records } = await read(oauth(), ctx)
    expect(records).toHaveLength(250)
    expect(fixture.state.tokens).toHaveLength(2)
    fixture.state.revoked.add('tok-2')
    fixture.state.revoked.add('tok-3')
    await expect(read(oauth(), ctx)).rejects.toThrow('API responded 401 Unauthorized: invalid or expired token')
    expect(fixture.state.tokens).toHaveLength(3)
  })

  it('uses a token without expires_in for one sync only', async () => {
    fixture.state.expiresIn = undefined
    await read(oauth(), ctx)
    await read(oauth(), ctx)
    expect(fixture.state.tokens).toHaveLength(2)
  })

  it('reports a refused client without showing its secret', async () => {
    const err = (await read(
      oauth({ clientSecret: 'wrong-secret', tokenAuthMethod: 'client_secret_post', tokenUrl: `${base}/token?post=1` }),
      ctx,
    ).catch((e: Error) => e)) as Error
    expect(err.message).toMatch(/^OAuth2 token endpoint responded 401 Unauthorized: client authentication failed/)
    expect(err.message).toContain('client_secret=<SECRET>')
    expect(err.message).not.toContain('wrong-secret')
  })
})

describe('api authentication: redirects to another origin', () => {
  // Two loopback servers on different ports are two origins: the source's and another one.
  let source: FixtureServer
  let elsewhere: FixtureServer

  beforeAll(async () => {
    source = await startJsonServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      const status = Number(url.searchParams.get('status') ?? 302)
      if (url.pathname === '/moved') return void res.writeHead(status, { location: `${elsewhere.url}/items` }).end()
      if (url.pathname === '/token') return void res.writeHead(307, { location: `${elsewhere.url}/token` }).end()
      if (url.pathname === '/moved-here') return void res.writeHead(307, { location: '/items' }).end()
      sendJson(res, 200, [{ id: 1 }])
    })
    elsewhere = await startJsonServer((_req, res) => sendJson(res, 200, [{ id: 2 }]))
  })
  afterAll(() => Promise.all([source.close(), elsewhere.close()]))

  const leaked = (server: FixtureServer, secret: string) =>
    server.requests.filter((r) => JSON.stringify(r).includes(secret)).map((r) => r.url)

  for (const status of [302, 307]) {
    it(`sends neither an API key in its own header nor a bearer token to another origin after a ${status}`, async () => {
      const keyed = await read({
        apiEndpoint: `${source.url}/moved?status=${status}`,
        authentication: { type: 'api-key', apiKey: 'key-redirected', apiKeyHeader: 'X-API-Key' },
      })
      expect(keyed.records.map((r) => r.data)).toEqual([{ id: 2 }])
      expect(source.requests.at(-1)?.headers['x-api-key']).toBe('key-redirected')
      const bearer = await read({
        apiEndpoint: `${source.url}/moved?status=${status}`,
        authentication: { type: 'bearer', token: 'tok-redirected' },
      })
      expect(bearer.records).toHaveLength(1)
      expect(leaked(elsewhere, 'key-redirected')).toEqual([])
      expect(leaked(elsewhere, 'tok-redirected')).toEqual([])
    })
  }

  it('keeps the API key on a redirect within the origin', async () => {
    await read({ apiEndpoint: `${source.url}/moved-here`, authentication: { type: 'api-key', apiKey: 'key-same' } })
    expect(source.requests.at(-1)).toMatchObject({ url: '/items', headers: { 'x-api-key': 'key-same' } })
  })

  it('does not resend a client_secret_post token request to another origin', async () => {
    const config = {
      apiEndpoint: `${source.url}/items`,
      authentication: {
        type: 'oauth2',
        clientId: 'cid',
        clientSecret: 'csecret-redirected',
        tokenUrl: `${source.url}/token`,
        tokenAuthMethod: 'client_secret_post',
      },
    }
    await expect(read(config)).rejects.toThrow(
      `Refusing to resend the request body to another origin (a 307 redirect to ${elsewhere.url})`,
    )
    expect(leaked(elsewhere, 'csecret-redirected')).toEqual([])
  })
})
