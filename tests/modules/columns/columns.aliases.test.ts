import { eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { columns } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

let t: TestApp
let alice: TestClient
let panelId: number
let otherPanelId: number
let age: { id: number; name: string }

const panel = async (name: string) => (await alice.post('/api/panels', { name, tenantId: 'tenant-a', userId: 'alice' })).body.id
const stored = async (id: number) => (await t.deps.db.select().from(columns).where(eq(columns.id, id)))[0]

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = await panel('Diabetes')
  otherPanelId = await panel('Cardio')
  age = (await alice.post(`/api/panels/${panelId}/columns/base`, { name: 'Age', sourceField: 'age' })).body
})

describe('PUT /api/panels/{panelId}/columns/{id} (deprecated alias)', () => {
  it('updates the column like PUT /api/columns/{id}', async () => {
    const res = await alice.put(`/api/panels/${panelId}/columns/${age.id}`, { name: 'Age (years)', type: 'number' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id: age.id, panelId, columnType: 'base', name: 'Age (years)', type: 'number' })
    expect((await alice.get(`/api/panels/${panelId}/columns`)).body.baseColumns[0].name).toBe('Age (years)')
  })

  it('takes ?cascade=true like the flat route', async () => {
    await alice.post(`/api/panels/${panelId}/columns/calculated`, { name: 'Older', formula: '{Age} + 10' })
    const refused = await alice.put(`/api/panels/${panelId}/columns/${age.id}`, { name: 'Years' })
    expect(refused.status).toBe(409)
    const res = await alice.put(`/api/panels/${panelId}/columns/${age.id}?cascade=true`, { name: 'Years' })
    expect(res.status).toBe(200)
    const { calculatedColumns } = (await alice.get(`/api/panels/${panelId}/columns`)).body
    expect(calculatedColumns[0].formula).toBe('{Years} + 10')
  })

  it('validates the body and the path like the flat route', async () => {
    const res = await alice.put(`/api/panels/${panelId}/columns/${age.id}`, { name: '' })
    expect(res.status).toBe(400)
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(['name'])
    const badPanel = await alice.put(`/api/panels/0/columns/${age.id}`, { name: 'x' })
    expect(badPanel.body.details).toEqual([{ path: 'panelId', message: 'must be a positive integer' }])
  })

  it('answers 404 for a column of another panel, exactly as for a missing one, and changes nothing', async () => {
    const before = await stored(age.id)
    const wrong = await alice.put(`/api/panels/${otherPanelId}/columns/${age.id}`, { name: 'Hijacked' })
    expect(wrong.status).toBe(404)
    expect(wrong.body).toMatchObject({ error: 'Column not found', message: `Column ${age.id} not found for tenant tenant-a` })
    expect(await stored(age.id)).toEqual(before)
  })

  it('answers 401 without a token and 404 to another user or tenant', async () => {
    const path = `/api/panels/${panelId}/columns/${age.id}`
    const noToken = await t.app.request(path, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'x' }),
    })
    expect(noToken.status).toBe(401)
    expect((await clientFor(t.app, 'tenant-a', 'bob').put(path, { name: 'x' })).status).toBe(404)
    expect((await clientFor(t.app, 'tenant-b', 'eve').put(path, { name: 'x' })).status).toBe(404)
    expect((await alice.put(path, { name: 'x', tenantId: 'tenant-b' })).status).toBe(403)
  })
})

describe('DELETE /api/panels/{panelId}/columns/{id} (deprecated alias)', () => {
  it('deletes the column like DELETE /api/columns/{id}', async () => {
    const res = await alice.delete(`/api/panels/${panelId}/columns/${age.id}`)
    expect(res.status).toBe(204)
    expect(await stored(age.id)).toBeUndefined()
  })

  it('answers 404 for a column of another panel and keeps it', async () => {
    const res = await alice.delete(`/api/panels/${otherPanelId}/columns/${age.id}`)
    expect(res.status).toBe(404)
    expect(res.body.error).toBe('Column not found')
    expect(await stored(age.id)).toBeDefined()
  })
})
