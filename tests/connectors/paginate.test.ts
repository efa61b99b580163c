import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import api from '../../src/connectors/api.ts'
import { linkNext } from '../../src/connectors/shared/paginate.ts'
import { ITEMS, startPagedApi } from '../helpers/api-server.ts'
import { readAllBatches } from '../helpers/connectors.ts'

let fixture: Awaited<ReturnType<typeof startPagedApi>>
let base: string

beforeAll(async () => {
  fixture = await startPagedApi()
  base = fixture.server.url
})
afterAll(() => fixture.close())

/** Reads an api source; returns the record ids, the truncation reports and the URLs requested. */
async function read(config: Record<string, unknown>) {
  const before = fixture.server.requests.length
  const { records, report } = await readAllBatches(api, config)
  const urls = fixture.server.requests.slice(before).map((r) => r.url)
  return { ids: records.map((r) => r.data.id), truncated: report.truncated, urls }
}

const ALL_IDS = ITEMS.map((i) => i.id)

describe('api paging: offset and page', () => {
  it('offset style sends offset and limit and stops at the short page', async () => {
    const r = await read({ apiEndpoint: `${base}/offset`, paginationStyle: 'offset', pageSize: 100 })
    expect(r.ids).toEqual(ALL_IDS)
    expect(r.urls).toEqual(['/offset?offset=0&limit=100', '/offset?offset=100&limit=100', '/offset?offset=200&limit=100'])
    expect(r.truncated).toEqual([])
  })

  it('page style sends a 1-based page and pageSize, keeping the endpoint query', async () => {
    const r = await read({ apiEndpoint: `${base}/page?sort=id`, paginationStyle: 'page', pageSize: 50 })
    expect(r.ids).toEqual(ALL_IDS)
    expect(r.urls[0]).toBe('/page?sort=id&page=1&pageSize=50')
    expect(r.urls.at(-1)).toBe('/page?sort=id&page=6&pageSize=50')
    expect(r.urls).toHaveLength(6) // 5 full pages, then an empty one ends the read
  })

  it('uses overridden parameter names', async () => {
    const r = await read({
      apiEndpoint: `${base}/custom`,
      paginationStyle: 'offset',
      pageSize: 125,
      offsetParam: 'skip',
      limitParam: 'take',
      dataPath: 'rows',
    })
    expect(r.ids).toEqual(ALL_IDS)
    expect(r.urls).toEqual(['/custom?skip=0&take=125', '/custom?skip=125&take=125', '/custom?skip=250&take=125'])
  })

  it('stops at maxPages and reports the truncation when there was more', async () => {
    const r = await read({ apiEndpoint: `${base}/offset`, paginationStyle: 'offset', pageSize: 100, maxPages: 2 })
    expect(r.ids).toEqual(ALL_IDS.slice(0, 200))
    expect(r.urls).toHaveLength(2)
    expect(r.truncated).toEqual(['Stopped at maxPages (2 pages); the API had more pages'])
  })

  it('does not report truncation when maxPages is reached on the last page', async () => {
    const r = await read({ apiEndpoint: `${base}/page`, paginationStyle: 'page', pageSize: 100, maxPages: 3 })
    expect(r.ids).toEqual(ALL_IDS)
    expect(r.truncated).toEqual([])
  })
})

describe('api paging: cursor', () => {
  it('sends the `next` cursor from the body as `cursor`, with limit when pageSize is set', async () => {
    const r = await read({ apiEndpoint: `${base}/cursor`, paginationStyle: 'cursor', pageSize: 100 })
    expect(r.ids).toEqual(ALL_IDS)
    expect(r.urls).toEqual(['/cursor?limit=100', '/cursor?limit=100&cursor=c-100', '/cursor?limit=100&cursor=c-200'])
  })

  it('finds meta.next_cursor, a custom cursorPath and cursorParam', async () => {
    const meta = await read({ apiEndpoint: `${base}/cursor-meta`, paginationStyle: 'cursor' })
    expect(meta.ids).toEqual(ALL_IDS)
    const custom = await read({ apiEndpoint: `${base}/cursor-custom`, paginationStyle: 'cursor', cursorPath: '$.paging.after' })
    expect(custom.ids).toEqual(ALL_IDS)
    expect(custom.urls[1]).toBe('/cursor-custom?cursor=c-100')
  })

  it('follows an absolute next URL on the same origin (links.next) and a Link header', async () => {
    const links = await read({ apiEndpoint: `${base}/cursor-url`, paginationStyle: 'cursor' })
    expect(links.ids).toEqual(ALL_IDS)
    expect(links.urls).toEqual(['/cursor-url', '/cursor-url?cursor=c-100', '/cursor-url?cursor=c-200'])
    const header = await read({ apiEndpoint: `${base}/cursor-link`, paginationStyle: 'cursor' })
    expect(header.ids).toEqual(ALL_IDS)
    expect(header.urls).toEqual(['/cursor-link', '/cursor-link?cursor=c-100', '/cursor-link?cursor=c-200'])
  })

  it('reports truncation at maxPages only while a next cursor exists', async () => {
    const cut = await read({ apiEndpoint: `${base}/cursor`, paginationStyle: 'cursor', maxPages: 1 })
    expect(cut.ids).toHaveLength(100)
    expect(cut.truncated).toHaveLength(1)
    const whole = await read({ apiEndpoint: `${base}/cursor`, paginationStyle: 'cursor', maxPages: 3 })
    expect(whole.ids).toEqual(ALL_IDS)
    expect(whole.truncated).toEqual([])
  })

  it('refuses a next URL on another origin', async () => {
    await expect(read({ apiEndpoint: `${base}/cursor-elsewhere`, paginationStyle: 'cursor' })).rejects.toThrow(
      /next page link points to another origin \(http:\/\/localhost:\d+\); only http:\/\/127\.0\.0\.1:\d+ is followed/,
    )
  })

  it('stops with an error when the API repeats a cursor instead of looping', async () => {
    await expect(read({ apiEndpoint: `${base}/cursor-stuck`, paginationStyle: 'cursor' })).rejects.toThrow(
      'The API returned the same next cursor twice (page 2)',
    )
  })
})

describe('linkNext', () => {
  it('takes the rel="next" target of a Link header, resolved against the request', () => {
    const at = new URL('https://api.test/v1/items?page=1')
    expect(linkNext('<https://api.test/v1/items?page=2>; rel="next"', at)).toBe('https://api.test/v1/items?page=2')
    expect(linkNext('</v1/items?page=1>; rel="prev", <?page=3>; rel=next', at)).toBe('https://api.test/v1/items?page=3')
    expect(linkNext('<a>; rel="next last"', at)).toBe('https://api.test/v1/a')
    expect(linkNext('<a>; rel="prev"', at)).toBeUndefined()
    expect(linkNext(null, at)).toBeUndefined()
  })
})
