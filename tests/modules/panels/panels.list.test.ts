import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient

const OWNER = 'tenant-a&userId=alice'
const list = (query = '') => alice.get(`/api/panels?tenantId=${OWNER}${query}`)
const names = (res: { body: { name: string }[] }) => res.body.map((p) => p.name)

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  for (const [name, description] of [
    ['Diabetes follow-up', 'HbA1c > 8'],
    ['Cardiology', 'Heart failure'],
    ['Diabetic foot', null],
    ['Oncology', 'diabetes screening'],
  ]) {
    t.clock.advance(1000)
    await alice.post('/api/panels', { name, description, tenantId: 'tenant-a', userId: 'alice' })
  }
  // Another owner's matching panel is never counted.
  await clientFor(t.app, 'tenant-a', 'bob').post('/api/panels', { name: 'Diabetes', tenantId: 'tenant-a', userId: 'bob' })
})

describe('GET /api/panels list headers', () => {
  it('sends none without list parameters', async () => {
    const res = await list()
    expect(res.body).toHaveLength(4)
    expect(res.headers.get('x-total-count')).toBeNull()
    expect(res.headers.get('link')).toBeNull()
  })

  it('with search alone: every matching panel, X-Total-Count and Link first/last naming the request', async () => {
    const res = await list('&search=diabet')
    expect(res.status).toBe(200)
    expect(names(res)).toEqual(['Oncology', 'Diabetic foot', 'Diabetes follow-up'])
    expect(res.headers.get('x-total-count')).toBe('3')
    const self = '</api/panels?tenantId=tenant-a&userId=alice&search=diabet>'
    expect(res.headers.get('link')).toBe(`${self}; rel="first", ${self}; rel="last"`)
  })

  it('with sort or order alone: the whole list with its count', async () => {
    const sorted = await list('&sort=name&order=asc')
    expect(names(sorted)).toEqual(['Cardiology', 'Diabetes follow-up', 'Diabetic foot', 'Oncology'])
    expect(sorted.headers.get('x-total-count')).toBe('4')
    expect(sorted.headers.get('link')).toContain('rel="last"')
    const ordered = await list('&order=asc')
    expect(ordered.headers.get('x-total-count')).toBe('4')
  })

  it('with search and no match: an empty list and X-Total-Count 0', async () => {
    const res = await list('&search=nothing-like-this')
    expect(res.body).toEqual([])
    expect(res.headers.get('x-total-count')).toBe('0')
  })

  it('with search and a page: the page, the matching total, and links between pages', async () => {
    const res = await list('&search=diabet&page=1&limit=2')
    expect(names(res)).toEqual(['Oncology', 'Diabetic foot'])
    expect(res.headers.get('x-total-count')).toBe('3')
    const at = (page: number) => `</api/panels?tenantId=tenant-a&userId=alice&search=diabet&page=${page}&limit=2>`
    expect(res.headers.get('link')).toBe(`${at(1)}; rel="first", ${at(2)}; rel="next", ${at(2)}; rel="last"`)
  })
})
