import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'

/** 401 without a token, 403 for another tenant named, 404 for another tenant's or user's view or source. */

let t: TestApp
let alice: TestClient
let bob: TestClient
let mallory: TestClient
let viewId: string
let sourceId: number

const view = { resourceType: 'ViewDefinition', resource: 'Patient', select: [{ column: [{ name: 'id', path: 'id' }] }] }
const params = (...parameter: Record<string, unknown>[]) => ({ resourceType: 'Parameters', parameter })

beforeAll(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  bob = clientFor(t.app, 'tenant-a', 'bob')
  mallory = clientFor(t.app, 'tenant-b', 'mallory')
  viewId = (await alice.post('/api/ViewDefinition', view)).body.id
  const panel = await alice.post('/api/panels', { name: 'P', tenantId: 'tenant-a', userId: 'alice' })
  sourceId = (
    await alice.post(`/api/panels/${panel.body.id}/datasources`, {
      type: 'fhir',
      config: { baseUrl: 'http://127.0.0.1:9/fhir', resourceTypes: ['Patient'] },
    })
  ).body.id
})

describe('/api/ViewDefinition security', () => {
  it('answers 401 without a token', async () => {
    expect((await t.app.request('/api/ViewDefinition')).status).toBe(401)
    const run = await t.app.request('/api/$viewdefinition-run', { method: 'POST', body: JSON.stringify(params()) })
    expect(run.status).toBe(401)
  })

  it("answers 404 for another tenant's or another user's stored view, by every route", async () => {
    for (const other of [mallory, bob]) {
      expect((await other.get(`/api/ViewDefinition/${viewId}`)).status).toBe(404)
      expect((await other.put(`/api/ViewDefinition/${viewId}`, view)).status).toBe(404)
      expect((await other.delete(`/api/ViewDefinition/${viewId}`)).status).toBe(404)
      expect((await other.get('/api/ViewDefinition')).body).toEqual({ views: [], total: 0 })
      const byUrl = await other.post(`/api/ViewDefinition/${viewId}/$viewdefinition-run`, params())
      expect(byUrl.status).toBe(404)
      const byReference = await other.post(
        '/api/$viewdefinition-run',
        params({ name: 'viewReference', valueReference: { reference: `ViewDefinition/${viewId}` } }),
      )
      expect(byReference.status).toBe(404)
    }
  })

  it("answers 404 for another tenant's data source as input", async () => {
    expect(
      (
        await alice.post(
          '/api/$viewdefinition-run',
          params({ name: 'viewResource', resource: view }, { name: 'source', valueString: String(sourceId) }),
        )
      ).status,
    ).toBe(200)
    const res = await mallory.post(
      '/api/$viewdefinition-run',
      params({ name: 'viewResource', resource: view }, { name: 'source', valueString: String(sourceId) }),
    )
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ code: 'NOT_FOUND', error: 'Data source not found' })
  })
})
