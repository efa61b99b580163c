import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { tokenFor } from '../helpers/auth.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { type ApiFixture, startApiFixture } from '../modules/datasources/fixtures.ts'

let api: ApiFixture
let t: TestApp
let alice: TestClient
let panelId: number
let viewId: number

beforeAll(async () => {
  api = await startApiFixture()
})
afterAll(() => api.server.close())

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await alice.post('/api/panels', { name: 'P', tenantId: 'tenant-a', userId: 'alice' })).body.id
  viewId = (await alice.post('/api/views', { name: 'V', panelId, tenantId: 'tenant-a', userId: 'alice' })).body.id
})

/** An empty body as Node's HTTP server hands every POST/PUT/DELETE to the app: a stream, no length. */
const emptyStream = () => new ReadableStream<Uint8Array>({ start: (controller) => controller.close() })
/** A body streamed without a Content-Length (chunked). */
const streamOf = (text: string) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text))
      controller.close()
    },
  })

/** A request with only the token: no Content-Type unless `headers` sets one. */
async function send(method: string, path: string, init: { body?: BodyInit; headers?: Record<string, string> } = {}) {
  const res = await t.app.request(path, {
    method,
    body: init.body,
    headers: { Authorization: `Bearer ${await tokenFor('tenant-a', 'alice')}`, ...init.headers },
    ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit)
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

const paths = (res: { body: { details: { path: string }[] } }) => res.body.details.map((d) => d.path)

describe('a write without a body', () => {
  it('DELETE /api/views/{id} with no body and no Content-Type answers 204', async () => {
    const res = await send('DELETE', `/api/views/${viewId}`, { body: emptyStream() })
    expect(res.status).toBe(204)
    expect((await alice.get(`/api/views/${viewId}`)).status).toBe(404)
  })

  it('DELETE /api/views/{id} with no body and Content-Type: application/json answers 204', async () => {
    const res = await send('DELETE', `/api/views/${viewId}`, {
      body: emptyStream(),
      headers: { 'Content-Type': 'application/json' },
    })
    expect(res.status).toBe(204)
  })

  it('DELETE with Content-Length: 0 and Content-Type: text/plain is no body, not a 415', async () => {
    const res = await send('DELETE', `/api/panels/${panelId}`, {
      body: '',
      headers: { 'Content-Type': 'text/plain', 'Content-Length': '0' },
    })
    expect(res.status).toBe(204)
  })

  it('POST publish, unpublish and sync accept no body as {}', async () => {
    expect((await send('POST', `/api/views/${viewId}/publish`, { body: emptyStream() })).body).toMatchObject({
      isPublished: true,
    })
    expect(
      (await send('POST', `/api/views/${viewId}/unpublish`, { body: '', headers: { 'Content-Type': 'text/plain' } })).status,
    ).toBe(200)
    const source = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'api',
      config: { apiEndpoint: `${api.server.url}/patients` },
    })
    const sync = await send('POST', `/api/datasources/${source.body.id}/sync`, { body: emptyStream() })
    expect(sync.status).toBe(200)
    expect(sync.body).toMatchObject({ status: 'success', recordsProcessed: 3 })
    const nested = await send('POST', `/api/panels/${panelId}/datasources/${source.body.id}/sync?async=true`, {
      body: emptyStream(),
    })
    expect(nested.status).toBe(202)
  })

  it('a required body missing is a 400 naming its fields, not a 415', async () => {
    const put = await send('PUT', '/api/notifications/views/mark-read', { body: emptyStream() })
    expect(put.status).toBe(400)
    expect(paths(put)).toContain('notificationIds')
    const post = await send('POST', '/api/panels', { body: '', headers: { 'Content-Type': 'text/plain', 'Content-Length': '0' } })
    expect(post.status).toBe(400)
    expect(paths(post)).toEqual(expect.arrayContaining(['name', 'tenantId', 'userId']))
  })
})

describe('a write with a body of the wrong type', () => {
  it('answers 415 with no Content-Type, on DELETE as on POST', async () => {
    const body = JSON.stringify({ tenantId: 'tenant-a' })
    const del = await send('DELETE', `/api/views/${viewId}`, { body: streamOf(body) })
    expect(del.status).toBe(415)
    expect(del.body).toMatchObject({ error: 'Unsupported Media Type', code: 'UNSUPPORTED_MEDIA_TYPE' })
    expect((await alice.get(`/api/views/${viewId}`)).status).toBe(200)
    expect((await send('POST', `/api/views/${viewId}/publish`, { body: streamOf(body) })).status).toBe(415)
  })

  it('answers 415 for a chunked text/plain body without a Content-Length', async () => {
    const res = await send('PUT', `/api/panels/${panelId}`, {
      body: streamOf('{"name":"Renamed"}'),
      headers: { 'Content-Type': 'text/plain' },
    })
    expect(res.status).toBe(415)
    expect((await alice.get(`/api/panels/${panelId}`)).body.name).toBe('P')
  })
})
