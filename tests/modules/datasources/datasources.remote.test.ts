import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { startPagedApi } from '../../helpers/api-server.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { createPanel, createSource, currentRecords, runsOf } from './fixtures.ts'

let paged: Awaited<ReturnType<typeof startPagedApi>>
let fhirServer: Awaited<ReturnType<typeof startFhirServer>>
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  paged = await startPagedApi()
  fhirServer = await startFhirServer()
})
afterAll(async () => {
  await paged.close()
  await fhirServer.close()
})

beforeEach(async () => {
  t = await makeTestApp()
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})

const paths = (res: { body: { details: { path: string }[] } }) => res.body.details.map((d) => d.path).sort()

describe('POST /api/panels/{panelId}/datasources (api sources)', () => {
  it('synchronises every page of a paged API', async () => {
    const res = await createSource(alice, panelId, {
      apiEndpoint: `${paged.server.url}/cursor`,
      paginationStyle: 'cursor',
      pageSize: 100,
      keyField: 'id',
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ syncStatus: 'success', errorMessage: null })
    const records = await currentRecords(t, res.body.id)
    expect(records).toHaveLength(250)
    expect(records[249]).toEqual({ key: '250', data: { id: 250, name: 'item 250', even: true } })
  })

  it('reports a maxPages cut on the sync run', async () => {
    const res = await createSource(alice, panelId, {
      apiEndpoint: `${paged.server.url}/offset`,
      paginationStyle: 'offset',
      pageSize: 100,
      maxPages: 1,
    })
    expect(res.body.syncStatus).toBe('success')
    expect(await currentRecords(t, res.body.id)).toHaveLength(100)
    const [run] = await runsOf(t, res.body.id)
    expect(run).toMatchObject({ status: 'success', truncated: true, rowsRead: 100 })
    expect(String(run.error)).toContain('Stopped at maxPages (1 pages); the API had more pages')
  })

  it('keeps an OAuth2 token in the source cache between syncs', async () => {
    paged.state.tokens.length = 0
    const res = await createSource(alice, panelId, {
      apiEndpoint: `${paged.server.url}/oauth/items?pageSize=300`,
      authentication: { type: 'oauth2', clientId: 'cid', clientSecret: 'csecret', tokenUrl: `${paged.server.url}/token` },
    })
    expect(res.body.syncStatus).toBe('success')
    expect(res.body.config.authentication.clientSecret).toBe('<SECRET>')
    const again = await alice.post(`/api/datasources/${res.body.id}/sync`, {})
    expect(again.body).toMatchObject({ syncStatus: 'success', recordsProcessed: 250 })
    expect(paged.state.tokens).toHaveLength(1)
  })

  it('answers 201 with syncStatus error and the reason when the API fails', async () => {
    const res = await createSource(alice, panelId, { apiEndpoint: `${paged.server.url}/not-found` })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ syncStatus: 'error', errorMessage: 'API responded 404 Not Found: no such thing here' })
  })

  it('answers 400 naming each bad config field', async () => {
    const res = await createSource(alice, panelId, {
      apiEndpoint: `${paged.server.url}/offset`,
      paginationStyle: 'infinite',
      retryAttempts: 50,
      authentication: { type: 'oauth2', clientId: 'c', clientSecret: 's' },
    })
    expect(res.status).toBe(400)
    expect(paths(res)).toEqual(['config.authentication.tokenUrl', 'config.paginationStyle', 'config.retryAttempts'])
  })
})

describe('POST /api/panels/{panelId}/datasources (fhir sources)', () => {
  it('synchronises the Bundles of several resource types, keyed Type/id', async () => {
    const res = await createSource(
      alice,
      panelId,
      { baseUrl: fhirServer.baseUrl, resourceTypes: ['Patient', 'Observation'], pageSize: 10 },
      'fhir',
    )
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ syncStatus: 'success', errorMessage: null })
    const records = await currentRecords(t, res.body.id)
    expect(records).toHaveLength(37)
    expect(records[0].key).toBe('Patient/pat-1')
    expect(records[0].data.name[0].family).toBe('Smith')
    expect(records.at(-1)?.key).toBe('Observation/obs-12')
  })

  it('puts an OperationOutcome into errorMessage', async () => {
    const res = await createSource(
      alice,
      panelId,
      { baseUrl: fhirServer.baseUrl, resourceType: 'Patient', searchParams: 'foo=bar' },
      'fhir',
    )
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      syncStatus: 'error',
      errorMessage:
        "FHIR server responded 400 with an OperationOutcome: error: Unknown search parameter 'foo' for resource type 'Patient'",
    })
  })

  it('answers 400 naming each bad config field', async () => {
    const res = await createSource(alice, panelId, { baseUrl: 'fhir.example.org', pageSize: 'ten' }, 'fhir')
    expect(res.status).toBe(400)
    expect(paths(res)).toEqual(['config.baseUrl', 'config.pageSize', 'config.resourceType'])
  })
})
