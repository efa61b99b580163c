import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import api, { ApiConfig, readBodyLimited, recordsFrom } from '../../src/connectors/api.ts'
import { ConnectorError } from '../../src/connectors/types.ts'
import { createGuardedFetch } from '../../src/lib/egress/guarded-fetch.ts'
import { ITEMS, startPagedApi } from '../helpers/api-server.ts'
import { readAllBatches } from '../helpers/connectors.ts'

let fixture: Awaited<ReturnType<typeof startPagedApi>>
let base: string

beforeAll(async () => {
  fixture = await startPagedApi()
  base = fixture.server.url
})
afterAll(() => fixture.close())

const read = (config: Record<string, unknown>, overrides = {}) => readAllBatches(api, config, overrides)
const ids = (records: { data: Record<string, unknown> }[]) => records.map((r) => r.data.id)

describe('api connector: requests and records', () => {
  it('yields one page of records in batches of 500', async () => {
    const { batches } = await read({ apiEndpoint: `${base}/offset?limit=1201` })
    expect(batches.map((b) => b.length)).toEqual([250])
    const many = await read({ apiEndpoint: `${base}/page?pageSize=250`, dataPath: '$.items' })
    expect(ids(many.records)).toEqual(ITEMS.map((i) => i.id))
  })

  it('sends method, headers and a JSON-encoded body; a string body as it is', async () => {
    const json = await read({ apiEndpoint: `${base}/echo`, method: 'post', body: { q: [1, 'a'] }, headers: { 'X-Trace': 't' } })
    expect(json.records[0].data).toEqual({ method: 'POST', body: '{"q":[1,"a"]}', type: 'application/json' })
    expect(fixture.server.requests.at(-1)?.headers['x-trace']).toBe('t')
    const text = await read({
      apiEndpoint: `${base}/echo`,
      method: 'PUT',
      body: 'a=1',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    })
    expect(text.records[0].data).toEqual({ method: 'PUT', body: 'a=1', type: 'application/x-www-form-urlencoded' })
  })

  it('answers a non-2xx status with the status and a short excerpt of the body', async () => {
    await expect(read({ apiEndpoint: `${base}/not-found` })).rejects.toThrow('API responded 404 Not Found: no such thing here')
  })

  it('explains a body that is not JSON', async () => {
    await expect(read({ apiEndpoint: `${base}/csv-semicolon`, responseFormat: 'json' })).rejects.toThrow(
      'API response is not valid JSON (content-type text/plain)',
    )
  })
})

describe('api connector: CSV and XML responses', () => {
  it('gathers small pages into batches of 500, so a write carries a batch, not a page', async () => {
    const paged = await read({ apiEndpoint: `${base}/page`, dataPath: '$.items', paginationStyle: 'page', pageSize: 40 })
    expect(paged.batches.map((b) => b.length)).toEqual([250])
    expect(ids(paged.records)).toEqual(ITEMS.map((i) => i.id))
  })

  it('reads paged CSV (detected by Content-Type) as rows', async () => {
    const { records, batches } = await read({ apiEndpoint: `${base}/csv`, paginationStyle: 'page', pageSize: 100 })
    expect(batches.map((b) => b.length)).toEqual([250])
    expect(records).toHaveLength(250)
    expect(records[0].data).toEqual({ id: '1', name: 'item 1', even: 'false' })
    expect(records[249].data).toEqual({ id: '250', name: 'item 250', even: 'true' })
  })

  it('reads CSV with a delimiter when responseFormat says csv', async () => {
    const { records } = await read({ apiEndpoint: `${base}/csv-semicolon`, responseFormat: 'csv', delimiter: ';' })
    expect(records.map((r) => r.data)).toEqual([
      { a: '1', b: 'x' },
      { a: '2', b: 'y' },
    ])
  })
})

describe('api connector: XML responses', () => {
  it('reads paged XML records at dataPath', async () => {
    const { records } = await read({
      apiEndpoint: `${base}/xml`,
      responseFormat: 'xml',
      dataPath: 'response.items.item',
      paginationStyle: 'page',
      pageSize: 100,
    })
    expect(records).toHaveLength(250)
    expect(records[0].data).toEqual({ id: '1', name: 'item 1', even: 'false' })
  })

  it('ends paging at an empty XML page', async () => {
    const before = fixture.server.requests.length
    const { records } = await read({
      apiEndpoint: `${base}/xml`,
      dataPath: 'response.items.item',
      paginationStyle: 'page',
      pageSize: 125,
    })
    expect(records).toHaveLength(250)
    expect(fixture.server.requests.length - before).toBe(3)
  })

  it('explains malformed XML and a path that matches nothing on the first page', async () => {
    await expect(read({ apiEndpoint: `${base}/csv`, responseFormat: 'xml' })).rejects.toThrow(/Malformed XML|root element/)
    await expect(read({ apiEndpoint: `${base}/xml`, dataPath: 'response.nothing' })).rejects.toThrow(
      'Record path "response.nothing" matches nothing in the XML document',
    )
    await expect(read({ apiEndpoint: `${base}/csv`, responseFormat: 'xml' })).rejects.toBeInstanceOf(ConnectorError)
  })
})

describe('api connector: retries', () => {
  it('retries a 429 after its Retry-After and then reads the data', async () => {
    const started = Date.now()
    const { records } = await read({ apiEndpoint: `${base}/flaky?key=r429&status=429&retryAfter=1`, retryDelay: 0 })
    expect(records).toHaveLength(2)
    expect(fixture.state.calls.get('r429')).toBe(2)
    expect(Date.now() - started).toBeGreaterThanOrEqual(950)
  })

  it('retries 503 with backoff until it succeeds', async () => {
    const { records } = await read({ apiEndpoint: `${base}/flaky?key=r503&fails=2`, retryAttempts: 2, retryDelay: 10 })
    expect(records).toHaveLength(2)
    expect(fixture.state.calls.get('r503')).toBe(3)
  })

  it('gives up after retryAttempts with a clear message', async () => {
    await expect(
      read({ apiEndpoint: `${base}/flaky?key=gone&fails=100&status=502`, retryAttempts: 3, retryDelay: 5 }),
    ).rejects.toThrow('API responded 502 Bad Gateway: try later (4) (gave up after 4 attempts)')
    expect(fixture.state.calls.get('gone')).toBe(4)
  })

  it('does not retry other client errors', async () => {
    await expect(read({ apiEndpoint: `${base}/flaky?key=r400&status=400`, retryDelay: 1 })).rejects.toThrow('API responded 400')
    expect(fixture.state.calls.get('r400')).toBe(1)
  })

  it('retries a refused connection, then reports it', async () => {
    const closed = await startPagedApi()
    const url = `${closed.server.url}/offset`
    await closed.close()
    await expect(read({ apiEndpoint: url, retryAttempts: 1, retryDelay: 5 })).rejects.toThrow(
      /API request to http:\/\/127\.0\.0\.1:\d+ failed: ECONNREFUSED \(gave up after 2 attempts\)/,
    )
  })
})

describe('api connector: service limits and user caps', () => {
  it('ends with a clear timeout error when the server hangs half-way', async () => {
    const started = Date.now()
    await expect(read({ apiEndpoint: `${base}/hang`, paginationStyle: 'page', timeout: 800 })).rejects.toThrow(
      "API request for page 2 timed out after 800 ms (the source's timeout)",
    )
    expect(Date.now() - started).toBeLessThan(3000)
  })

  it("says so when the sync's own time limit or a cancel stops a request", async () => {
    await expect(
      read({ apiEndpoint: `${base}/hang`, paginationStyle: 'page' }, { signal: AbortSignal.timeout(500) }),
    ).rejects.toThrow("API request for page 2 was stopped by the synchronisation's time limit")
    const cancel = new AbortController()
    setTimeout(() => cancel.abort(), 300)
    await expect(read({ apiEndpoint: `${base}/hang`, paginationStyle: 'page' }, { signal: cancel.signal })).rejects.toThrow(
      'API request for page 2 was cancelled',
    )
  })

  it('counts response bytes across pages against the sync byte limit', async () => {
    const limits = { maxBytes: 6000, maxRecords: 1_000_000 }
    await expect(read({ apiEndpoint: `${base}/offset`, paginationStyle: 'offset' }, { limits })).rejects.toThrow(
      'API responses exceed the limit of 6000 bytes read in one synchronisation',
    )
    const small = { maxBytes: 3000, maxRecords: 1_000_000 }
    await expect(read({ apiEndpoint: `${base}/csv`, paginationStyle: 'page' }, { limits: small })).rejects.toThrow(
      'API responses exceed the limit of 3000 bytes read in one synchronisation',
    )
    const { records } = await read({ apiEndpoint: `${base}/offset`, paginationStyle: 'offset', maxPages: 1 }, { limits })
    expect(records).toHaveLength(100)
  })

  it('is refused a loopback address when private networks are not allowed', async () => {
    const guarded = createGuardedFetch({ fetch, allowPrivate: false })
    const before = fixture.server.requests.length
    await expect(read({ apiEndpoint: `${base}/offset` }, { fetch: guarded })).rejects.toThrow(
      /Refusing to connect to 127\.0\.0\.1: it is a loopback address/,
    )
    await expect(read({ apiEndpoint: `${base}/offset` }, { fetch: guarded })).rejects.toBeInstanceOf(ConnectorError)
    expect(fixture.server.requests.length).toBe(before)
  })
})

describe('api config', () => {
  it('names each bad field', () => {
    const r = ApiConfig.safeParse({
      apiEndpoint: 'ftp://x',
      method: 'DELETE',
      authentication: { type: 'oauth2', clientId: 5, tokenUrl: 'nope' },
      paginationStyle: 'scroll',
      pageSize: 0,
      maxPages: -1,
      retryAttempts: 11,
      retryDelay: 'soon',
      timeout: 0,
      dataPath: 'a..b',
      cursorPath: '[',
      responseFormat: 'yaml',
    })
    expect(r.success).toBe(false)
    expect(r.error?.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'apiEndpoint',
      'authentication.clientId',
      'authentication.clientSecret',
      'authentication.tokenUrl',
      'cursorPath',
      'dataPath',
      'maxPages',
      'method',
      'pageSize',
      'paginationStyle',
      'responseFormat',
      'retryAttempts',
      'retryDelay',
      'timeout',
    ])
  })

  it('fills the defaults', () => {
    expect(ApiConfig.parse({ apiEndpoint: 'https://a.test' })).toMatchObject({
      method: 'GET',
      timeout: 30_000,
      retryAttempts: 2,
      retryDelay: 500,
      hasHeaders: true,
    })
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
