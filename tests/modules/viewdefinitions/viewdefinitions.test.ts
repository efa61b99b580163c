import { beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

/** Stored ViewDefinitions at /api/ViewDefinition (SQL-ON-FHIR.md, "Stored ViewDefinitions"). */

const view = (name: string, resource = 'Patient') => ({
  resourceType: 'ViewDefinition',
  name,
  status: 'active',
  resource,
  select: [{ column: [{ name: 'id', path: 'id', type: 'id' }] }],
})

let t: TestApp
let alice: TestClient

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
})

describe('POST /api/ViewDefinition', () => {
  it('stores a valid view and answers it with id and meta.lastUpdated', async () => {
    const res = await alice.post('/api/ViewDefinition', { ...view('patients'), id: 'ignored', meta: { versionId: '9' } })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      ...view('patients'),
      id: expect.stringMatching(/^\d+$/),
      meta: { lastUpdated: '2026-01-01T12:00:00.000Z' },
    })
    expect((await alice.get(`/api/ViewDefinition/${res.body.id}`)).body).toEqual(res.body)
  })

  it('never stores an invalid view', async () => {
    const res = await alice.post('/api/ViewDefinition', {
      ...view('bad'),
      select: [{ column: [{ name: 'id', path: 'where(' }] }],
    })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'INVALID_VIEW_DEFINITION', details: [{ path: 'select[0].column[0].path' }] })
    expect((await alice.get('/api/ViewDefinition')).body).toEqual({ views: [], total: 0 })
  })
})

describe('GET /api/ViewDefinition', () => {
  it('lists the caller’s views, filtered by name and resource', async () => {
    await alice.post('/api/ViewDefinition', view('a'))
    t.clock.advance(1000)
    await alice.post('/api/ViewDefinition', view('b', 'Observation'))
    const all = await alice.get('/api/ViewDefinition')
    expect(all.body.total).toBe(2)
    expect(all.body.views.map((v: { name: string }) => v.name)).toEqual(['b', 'a'])
    expect((await alice.get('/api/ViewDefinition?resource=Patient')).body.views.map((v: { name: string }) => v.name)).toEqual([
      'a',
    ])
    expect((await alice.get('/api/ViewDefinition?name=b')).body.total).toBe(1)
  })
})

describe('PUT and DELETE /api/ViewDefinition/{id}', () => {
  it('replaces a view after validating it, then deletes it', async () => {
    const id = (await alice.post('/api/ViewDefinition', view('a'))).body.id
    t.clock.advance(5000)
    const put = await alice.put(`/api/ViewDefinition/${id}`, view('renamed', 'Observation'))
    expect(put.status).toBe(200)
    expect(put.body).toMatchObject({
      id,
      name: 'renamed',
      resource: 'Observation',
      meta: { lastUpdated: '2026-01-01T12:00:05.000Z' },
    })
    const invalid = await alice.put(`/api/ViewDefinition/${id}`, { ...view('x'), resource: 'Nope' })
    expect(invalid.status).toBe(400)
    expect((await alice.get(`/api/ViewDefinition/${id}`)).body.name).toBe('renamed')
    expect((await alice.put(`/api/ViewDefinition/${id}`, { ...view('x'), id: '999' })).status).toBe(400)
    expect((await alice.delete(`/api/ViewDefinition/${id}`)).status).toBe(204)
    expect((await alice.get(`/api/ViewDefinition/${id}`)).status).toBe(404)
  })
})
