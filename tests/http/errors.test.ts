import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { authHeaders } from '../helpers/auth.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { onTarget, SKIP } from '../helpers/target.ts'

let t: TestApp
let alice: TestClient

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
})

const ERROR_KEYS = ['code', 'details', 'error', 'message', 'requestId', 'statusCode', 'timestamp']
const MIB = 1024 * 1024

async function raw(method: string, path: string, init: { body?: BodyInit; headers?: Record<string, string> } = {}) {
  const res = await t.app.request(path, {
    method,
    body: init.body,
    headers: { ...(await authHeaders('tenant-a', 'alice')), ...init.headers },
    ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit)
  const text = await res.text()
  let body: any = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    body = text
  }
  return { status: res.status, headers: res.headers, body }
}

/** A body streamed in 64 KiB chunks, so the request carries no Content-Length. */
function streamOf(totalBytes: number) {
  const chunk = new TextEncoder().encode('x'.repeat(64 * 1024))
  let sent = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= totalBytes) return controller.close()
      controller.enqueue(chunk)
      sent += chunk.byteLength
    },
  })
}

const validBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name: 'P', tenantId: 'tenant-a', userId: 'alice', ...extra })

describe('unknown routes', () => {
  it('answers 404 Route not found with the error body', async () => {
    const res = await alice.get('/api/nowhere')
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ error: 'Route not found', statusCode: 404, code: 'NOT_FOUND' })
    expect(Object.keys(res.body).sort()).toEqual(ERROR_KEYS)
  })

  it('answers 404 outside /api without a token', async () => {
    const res = await t.app.request('/nowhere')
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ error: 'Route not found', code: 'NOT_FOUND' })
  })
})

describe('GET /api/panels/{id}', () => {
  it('answers 400 for a non-integer id', async () => {
    for (const id of ['abc', '1.5', '-1', '0']) {
      const res = await alice.get(`/api/panels/${id}`)
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ error: 'Validation Error', code: 'VALIDATION_ERROR' })
      expect(res.body.details[0].path).toBe('id')
    }
  })
})

describe('POST /api/panels bodies', () => {
  it('answers 413 PAYLOAD_TOO_LARGE for a body over 1 MiB', async () => {
    const res = await raw('POST', '/api/panels', { body: validBody({ description: 'x'.repeat(MIB + 10) }) })
    expect(res.status).toBe(413)
    expect(res.body).toMatchObject({ error: 'Payload Too Large', statusCode: 413, code: 'PAYLOAD_TOO_LARGE' })
  })

  it('answers 413 for a streamed body over 1 MiB without a Content-Length', async () => {
    const res = await raw('POST', '/api/panels', { body: streamOf(MIB + 128 * 1024) })
    expect(res.status).toBe(413)
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('accepts a body just under 1 MiB up to the schema check', async () => {
    const res = await raw('POST', '/api/panels', { body: validBody({ padding: 'x'.repeat(MIB - 200) }) })
    expect(res.status).toBe(201)
  })

  it('answers 415 for a text/plain body', async () => {
    const res = await raw('POST', '/api/panels', { body: validBody(), headers: { 'Content-Type': 'text/plain' } })
    expect(res.status).toBe(415)
    expect(res.body).toMatchObject({ error: 'Unsupported Media Type', statusCode: 415, code: 'UNSUPPORTED_MEDIA_TYPE' })
  })

  it('accepts application/json with a charset', async () => {
    const res = await raw('POST', '/api/panels', {
      body: validBody(),
      headers: { 'Content-Type': 'application/json; charset=utf-8' },
    })
    expect(res.status).toBe(201)
  })

  it('answers 400 INVALID_JSON for malformed JSON', async () => {
    const res = await raw('POST', '/api/panels', { body: '{"name": "P",' })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ error: 'Validation Error', statusCode: 400, code: 'INVALID_JSON' })
  })
})

describe('PUT /api/panels/{id} bodies', () => {
  it('reads an empty body as {} when every field is optional', async () => {
    const { body: panel } = await alice.post('/api/panels', { name: 'P', tenantId: 'tenant-a', userId: 'alice' })
    const res = await raw('PUT', `/api/panels/${panel.id}`, { body: '' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: panel.id, name: 'P' })
    const noBody = await raw('DELETE', `/api/panels/${panel.id}`)
    expect(noBody.status).toBe(204)
  })
})

describe('error bodies', () => {
  it('carry error, statusCode, message, code, details, timestamp and requestId for every status', async () => {
    const responses = [
      await alice.get('/api/panels/abc'),
      await clientFor(t.app, 'tenant-b', 'x').get('/api/panels?tenantId=tenant-a&userId=x'),
      await alice.get('/api/panels/999'),
      await raw('GET', '/api/panels?tenantId=tenant-a&userId=alice', { headers: { Authorization: '' } }),
      await raw('POST', '/api/panels', { body: 'x', headers: { 'Content-Type': 'text/plain' } }),
    ]
    expect(responses.map((r) => r.status)).toEqual([400, 403, 404, 401, 415])
    for (const res of responses) {
      expect(Object.keys(res.body).sort()).toEqual(ERROR_KEYS)
      expect(res.body.statusCode).toBe(res.status)
      expect(res.body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(res.body.requestId).toBe(res.headers.get('x-request-id'))
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    }
  })
})

describe('unexpected errors', () => {
  it.skipIf(onTarget(['workers', 'deno'], SKIP.inProcess))(
    'answers 500 INTERNAL_ERROR without internals and logs the request id',
    async () => {
      t.app.get('/api/boom', () => {
        throw new Error('db password is hunter2')
      })
      const res = await raw('GET', '/api/boom')
      expect(res.status).toBe(500)
      expect(res.body).toMatchObject({ error: 'Internal Server Error', statusCode: 500, code: 'INTERNAL_ERROR' })
      expect(JSON.stringify(res.body)).not.toContain('hunter2')
      expect(JSON.stringify(res.body)).not.toMatch(/at .*\.ts/)
      const line = t.logs.find((l) => l.level === 'error' && l.requestId === res.body.requestId)
      expect(line).toBeDefined()
      expect(line).toMatchObject({ method: 'GET', path: '/api/boom' })
    },
  )
})

describe('X-Request-Id', () => {
  it('echoes a sane incoming id', async () => {
    const res = await alice.get('/api/panels/999', { 'X-Request-Id': 'req-123.abc:9' })
    expect(res.headers.get('x-request-id')).toBe('req-123.abc:9')
    expect(res.body.requestId).toBe('req-123.abc:9')
  })

  it('replaces an insane incoming id', async () => {
    for (const bad of ['x'.repeat(300), 'has spaces in it', 'evil\u00e9']) {
      const res = await alice.get('/api/panels/999', { 'X-Request-Id': bad })
      const id = res.headers.get('x-request-id')
      expect(id).toBeTruthy()
      expect(id).not.toBe(bad)
      expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/)
      expect(res.body.requestId).toBe(id)
    }
  })

  it('generates an id when none is sent, a new one per request', async () => {
    const a = await alice.get('/api/panels?tenantId=tenant-a&userId=alice')
    const b = await alice.get('/api/panels?tenantId=tenant-a&userId=alice')
    expect(a.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'))
  })
})

describe('secure headers', () => {
  it('are present on success and error responses', async () => {
    for (const res of [await alice.get('/api/panels?tenantId=tenant-a&userId=alice'), await alice.get('/api/nowhere')]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('x-frame-options')).toBeTruthy()
      expect(res.headers.get('referrer-policy')).toBeTruthy()
      expect(res.headers.get('strict-transport-security')).toBeTruthy()
      expect(res.headers.get('x-powered-by')).toBeNull()
    }
  })
})

describe('access log', () => {
  it.skipIf(onTarget(['workers', 'deno'], SKIP.logs))(
    'writes one structured line per request with requestId, method, path, status and durationMs',
    async () => {
      const before = t.logs.length
      await alice.get('/api/panels?tenantId=tenant-a&userId=alice', { 'X-Request-Id': 'log-1' })
      await alice.get('/api/panels/999', { 'X-Request-Id': 'log-2' })
      await raw('GET', '/api/panels', { headers: { Authorization: '', 'X-Request-Id': 'log-3' } })
      const lines = t.logs.slice(before).filter((l) => l.msg === 'request')
      expect(lines).toHaveLength(3)
      expect(lines[0]).toMatchObject({ level: 'info', requestId: 'log-1', method: 'GET', path: '/api/panels', status: 200 })
      expect(lines[1]).toMatchObject({ requestId: 'log-2', path: '/api/panels/999', status: 404 })
      expect(lines[2]).toMatchObject({ requestId: 'log-3', status: 401 })
      for (const l of lines) expect(typeof l.durationMs).toBe('number')
      expect(JSON.stringify(lines)).not.toContain('Bearer')
    },
  )

  it.skipIf(onTarget(['workers', 'deno'], SKIP.logs))("leaves a notification URL's token out of the path it logs", async () => {
    const before = t.logs.length
    const token = 'a'.repeat(43)
    await raw('POST', `/fhir-notify/${token}`, { headers: { 'X-Request-Id': 'log-4' } })
    await raw('PUT', `/fhir-notify/${token}/Patient/p1`, { headers: { 'X-Request-Id': 'log-5' } })
    const lines = t.logs.slice(before).filter((l) => l.msg === 'request')
    expect(lines.map((l) => l.path)).toEqual(['/fhir-notify/[token]', '/fhir-notify/[token]/Patient/p1'])
    expect(JSON.stringify(t.logs.slice(before))).not.toContain(token)
  })
})
