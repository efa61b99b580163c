import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { signRaw } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient
let bob: TestClient
let eve: TestClient
let panelId: number
let ageId: number
let doubleId: number

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  eve = clientFor(t.app, 'tenant-b', 'eve')
  panelId = (await alice.post('/api/panels', { name: 'Diabetes', tenantId: 'tenant-a', userId: 'alice' })).body.id
  ageId = (await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Age', sourceField: 'age' })).body.id
  doubleId = (await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Double', formula: '{Age} * 2' })).body.id
})

const listOf = async (c: TestClient = alice) => (await c.get(`/api/panels/${panelId}/columns`)).body

/** Every column route, as [method, path, body]. */
const routes = (): [string, string, Record<string, unknown> | undefined][] => [
  ['GET', `/api/panels/${panelId}/columns`, undefined],
  ['POST', `/api/panels/${panelId}/columns/base`, { name: 'X', sourceField: 'x' }],
  ['POST', `/api/panels/${panelId}/columns/calculated`, { name: 'Y', formula: '1' }],
  ['PUT', `/api/columns/${ageId}`, { name: 'Changed' }],
  ['PUT', `/api/columns/${doubleId}`, { formula: '{Age} * 3' }],
  ['DELETE', `/api/columns/${doubleId}`, undefined],
]

/** One route called by `c` (GET takes no body). */
const send = (c: TestClient, method: string, path: string, body?: Record<string, unknown>) =>
  method === 'GET'
    ? c.get(path)
    : method === 'POST'
      ? c.post(path, body)
      : method === 'PUT'
        ? c.put(path, body)
        : c.delete(path, body)

async function raw(method: string, path: string, body: unknown, authorization?: string) {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' }
  if (authorization) headers.Authorization = authorization
  const res = await t.app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

describe('columns authentication', () => {
  it('answers 401 on every route without a token, and with a token signed by another secret', async () => {
    const forged = `Bearer ${await signRaw({ tenantId: 'tenant-a', userId: 'alice', exp: 4102444800 }, 'another-secret-another-secret-00000')}`
    for (const [method, path, body] of routes()) {
      for (const auth of [undefined, forged]) {
        const res = await raw(method, path, body, auth)
        expect(res.status, `${method} ${path}`).toBe(401)
        expect(res.body.error).toBe('Unauthorized')
      }
    }
    expect(await listOf()).toMatchObject({ baseColumns: [{ name: 'Age' }], calculatedColumns: [{ name: 'Double' }] })
  })
})

describe('columns tenant guard', () => {
  it('answers 403 when the body names another tenant', async () => {
    const writes = routes().filter(([method]) => method !== 'GET')
    for (const [method, path, body] of writes) {
      const res = await send(alice, method, path, { ...body, tenantId: 'tenant-b' })
      expect(res.status, `${method} ${path}`).toBe(403)
      expect(res.body.error).toBe('Access denied to tenant')
    }
  })

  it('answers 403 when the query names another tenant', async () => {
    const list = await alice.get(`/api/panels/${panelId}/columns?tenantId=tenant-b`)
    expect(list.status).toBe(403)
    expect(list.body.error).toBe('Access denied to tenant')
    expect((await alice.put(`/api/columns/${ageId}?tenantId=tenant-b`, { name: 'X' })).status).toBe(403)
    expect((await alice.delete(`/api/columns/${doubleId}?tenantId=tenant-b`)).status).toBe(403)
  })

  it('answers 403 Access denied to user for another userId, and 400 before 403', async () => {
    const res = await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'X', sourceField: 'x', userId: 'bob' })
    expect(res.status).toBe(403)
    expect(res.body.error).toBe('Access denied to user')
    const invalid = await alice.post(`/api/panels/${panelId}/columns/base`, { name: '', sourceField: 'x', tenantId: 'tenant-b' })
    expect(invalid.status).toBe(400)
  })
})

describe('columns isolation', () => {
  it('answers 404 to another tenant on every route and leaves the columns unchanged', async () => {
    const before = await listOf()
    for (const [method, path, body] of routes()) {
      const res = await send(eve, method, path, body)
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.body.message).toContain('tenant-b')
      expect(JSON.stringify(res.body)).not.toContain('Age')
    }
    expect(await listOf()).toEqual(before)
  })

  it("answers 404 to another user of the tenant on the owner's panel and columns", async () => {
    const before = await listOf()
    for (const [method, path, body] of routes()) {
      const res = await send(bob, method, path, body)
      expect(res.status, `${method} ${path}`).toBe(404)
    }
    const put = await bob.put(`/api/columns/${ageId}`, { name: 'Changed' })
    expect(put.body).toMatchObject({ error: 'Column not found', message: `Column ${ageId} not found for tenant tenant-a` })
    expect(await listOf()).toEqual(before)
  })

  it('lets an admin of the tenant manage the columns, owned by the panel owner', async () => {
    const admin = clientFor(t.app, 'tenant-a', 'root', { role: 'admin' })
    const res = await admin.post(`/api/panels/${panelId}/columns/base`, { name: 'Sex', sourceField: 'sex' })
    expect(res.status).toBe(201)
    expect(res.body.userId).toBe('alice')
    expect((await admin.put(`/api/columns/${ageId}`, { type: 'number' })).status).toBe(200)
  })
})

describe('columns id space', () => {
  it('never gives a base and a calculated column the same id, and PUT updates either kind', async () => {
    const more = [
      (await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Weight', sourceField: 'w' })).body,
      (await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Half', formula: '{Weight} / 2' })).body,
    ]
    const { baseColumns, calculatedColumns } = await listOf()
    const ids = [...baseColumns, ...calculatedColumns].map((c: { id: number }) => c.id)
    expect(new Set(ids).size).toBe(4)
    expect(ids).toEqual(expect.arrayContaining([ageId, doubleId, ...more.map((c) => c.id)]))
    const b = await alice.put(`/api/columns/${ageId}`, { type: 'number' })
    expect(b.body).toMatchObject({ id: ageId, columnType: 'base', type: 'number' })
    const c = await alice.put(`/api/columns/${doubleId}`, { formula: '{Age} * 4' })
    expect(c.body).toMatchObject({ id: doubleId, columnType: 'calculated', formula: '{Age} * 4' })
  })
})
