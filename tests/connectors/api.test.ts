import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import api, { ApiConfig, readBodyLimited, recordsFrom } from '../../src/connectors/api.ts'
import type { ConnectorContext, SourceRecord } from '../../src/connectors/types.ts'
import { testConnectorContext } from '../helpers/connectors.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../helpers/servers.ts'

let server: FixtureServer

beforeAll(async () => {
  server = await startJsonServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname === '/many') return sendJson(res, 200, { results: Array.from({ length: 1201 }, (_, i) => ({ n: i })) })
    if (url.pathname === '/scalars') return sendJson(res, 200, [1, 'two', null])
    if (url.pathname === '/token') {
      const ok =
        req.headers.authorization === `Basic ${btoa('cid:csecret')}` && req.body.includes('grant_type=client_credentials')
      return ok ? sendJson(res, 200, { access_token: 'tok-from-oauth', expires_in: 60 }) : sendJson(res, 401, {})
    }
    sendJson(res, 200, [
      { method: req.method, body: req.body, key: req.headers['x-key'] ?? null, auth: req.headers.authorization ?? null },
    ])
  })
})
afterAll(() => server.close())

const ctx = (timeout = 5000): ConnectorContext => testConnectorContext({ signal: AbortSignal.timeout(timeout) })

async function readAll(config: Record<string, unknown>) {
  const batches: SourceRecord[][] = []
  for await (const batch of api.read(ApiConfig.parse(config), ctx())) batches.push(batch)
  return batches
}

describe('api connector', () => {
  it('yields the records in batches of 500', async () => {
    const batches = await readAll({ apiEndpoint: `${server.url}/many` })
    expect(batches.map((b) => b.length)).toEqual([500, 500, 201])
    expect(batches[2][200].data).toEqual({ n: 1200 })
  })

  it('wraps non-object items as { value }', async () => {
    const [batch] = await readAll({ apiEndpoint: `${server.url}/scalars` })
    expect(batch.map((r) => r.data)).toEqual([{ value: 1 }, { value: 'two' }, { value: null }])
  })

  it('sends method, JSON body and an api-key header', async () => {
    const [[record]] = await readAll({
      apiEndpoint: `${server.url}/echo`,
      method: 'post',
      body: { q: 1 },
      authentication: { type: 'api-key', apiKey: 'k-1', apiKeyHeader: 'X-Key' },
    })
    expect(record.data).toEqual({ method: 'POST', body: '{"q":1}', key: 'k-1', auth: null })
  })

  it('gets an OAuth2 client-credentials token and sends it', async () => {
    const [[record]] = await readAll({
      apiEndpoint: `${server.url}/echo`,
      authentication: { type: 'oauth2', clientId: 'cid', clientSecret: 'csecret', tokenUrl: `${server.url}/token` },
    })
    expect(record.data.auth).toBe('Bearer tok-from-oauth')
  })

  it('refuses features not available yet instead of reading part of the source', async () => {
    await expect(readAll({ apiEndpoint: `${server.url}/many`, paginationStyle: 'page' })).rejects.toThrow(/not available yet/)
    await expect(readAll({ apiEndpoint: `${server.url}/many`, responseFormat: 'xml' })).rejects.toThrow(/not available yet/)
  })

  it('validates its config', () => {
    const r = ApiConfig.safeParse({ apiEndpoint: 'x', authentication: { type: 'bearer' } })
    expect(r.success).toBe(false)
    expect(r.error?.issues.map((i) => i.path.join('.')).sort()).toEqual(['apiEndpoint', 'authentication.token'])
    expect(ApiConfig.parse({ apiEndpoint: 'https://a.test' })).toMatchObject({ method: 'GET', timeout: 30_000 })
  })
})

describe('recordsFrom', () => {
  it('takes the array at dataPath, the body array, or data/items/results', () => {
    expect(recordsFrom({ x: { y: [1] } }, '$.x.y')).toEqual([1])
    expect(recordsFrom({ rows: [{ p: 1 }, { p: 2 }] }, 'rows[*].p')).toEqual([1, 2])
    expect(recordsFrom([1, 2])).toEqual([1, 2])
    expect(recordsFrom({ items: [3] })).toEqual([3])
  })

  it('explains a response without an array', () => {
    expect(() => recordsFrom({ a: 1 })).toThrow('The API response is an object, not an array of records; set dataPath')
    expect(() => recordsFrom({ a: 1 }, 'b')).toThrow('dataPath "b" matches nothing in the API response')
    expect(() => recordsFrom({ a: 'x' }, 'a')).toThrow('dataPath "a" points to a string in the API response, not an array')
  })
})

describe('readBodyLimited', () => {
  it('refuses a body over the limit by Content-Length or while streaming', async () => {
    await expect(readBodyLimited(new Response('x'.repeat(20), { headers: { 'content-length': '20' } }), 10)).rejects.toThrow(
      'API response is larger than the 10 bytes limit',
    )
    const stream = new ReadableStream({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(new TextEncoder().encode('abcd'))
        c.close()
      },
    })
    await expect(readBodyLimited(new Response(stream), 10)).rejects.toThrow(/larger than the 10 bytes limit/)
    expect(new TextDecoder().decode(await readBodyLimited(new Response('abc'), 10))).toBe('abc')
  })
})
