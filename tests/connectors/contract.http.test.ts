import { afterAll, beforeAll } from 'vitest'
import api from '../../src/connectors/api.ts'
import fhir from '../../src/connectors/fhir.ts'
import { startPagedApi } from '../helpers/api-server.ts'
import { startFhirServer } from '../helpers/fhir-server.ts'
import type { FixtureServer } from '../helpers/servers.ts'
import { startMisbehavingHttp } from '../helpers/stalled-sources.ts'
import { failing, readWith, testConnector } from './contract.ts'

let apiFixture: Awaited<ReturnType<typeof startPagedApi>>
let fhirFixture: Awaited<ReturnType<typeof startFhirServer>>
let misbehaving: FixtureServer

beforeAll(async () => {
  apiFixture = await startPagedApi()
  fhirFixture = await startFhirServer()
  misbehaving = await startMisbehavingHttp()
})

afterAll(async () => {
  await Promise.all([apiFixture?.close(), fhirFixture?.close(), misbehaving?.close()])
})

const apiSource = () => ({ config: { apiEndpoint: `${apiFixture.server.url}/offset`, paginationStyle: 'offset' } })
testConnector({
  name: 'api',
  connector: api,
  config: {
    bad: {
      config: { apiEndpoint: 'http://reader:pw@api.test/x', method: 'DELETE', pageSize: 0, authentication: { type: 'bearer' } },
      fields: ['apiEndpoint', 'method', 'pageSize', 'authentication.token'],
    },
    missing: { config: {}, fields: ['apiEndpoint'] },
  },
  records: readWith(api, apiSource),
  keys: 'content',
  signal: { hanging: () => ({ config: { apiEndpoint: `${misbehaving.url}/hang/items` } }) },
  limits: {
    source: apiSource,
    count: 250,
    maxRecords: 'sync',
    maxBytes: 'refuses',
    cap: { config: { maxPages: 1 }, field: 'maxPages', records: 100 },
  },
  failures: () => {
    const base = apiFixture.server.url
    const token = 'tok-Zq8+recognisable/secret='
    const clientSecret = 'cs-Zq8 recognisable&secret='
    return [
      {
        what: 'a 401 that echoes the bearer token',
        run: failing(api, { apiEndpoint: `${base}/bearer`, authentication: { type: 'bearer', token } }),
        secrets: [token],
      },
      {
        what: 'a token endpoint that echoes the form with the client secret',
        run: failing(api, {
          apiEndpoint: `${base}/oauth/items`,
          authentication: {
            type: 'oauth2',
            clientId: 'cid',
            clientSecret,
            tokenUrl: `${base}/token?post=1`,
            tokenAuthMethod: 'client_secret_post',
          },
          retryAttempts: 0,
        }),
        secrets: [clientSecret],
      },
    ]
  },
})

const fhirSource = () => ({ config: { baseUrl: fhirFixture.baseUrl, resourceType: 'Patient', pageSize: 10 } })
testConnector({
  name: 'fhir',
  connector: fhir,
  config: {
    bad: {
      config: { baseUrl: 'ftp://fhir.test', resourceType: 'patient', pageSize: 5000, timeout: 0 },
      fields: ['baseUrl', 'resourceType', 'pageSize', 'timeout'],
    },
    missing: { config: {}, fields: ['baseUrl', 'resourceType'] },
  },
  records: readWith(fhir, fhirSource),
  keys: 'own',
  signal: { hanging: () => ({ config: { baseUrl: `${misbehaving.url}/hang/fhir`, resourceType: 'Patient' } }) },
  limits: {
    source: fhirSource,
    count: 25,
    maxRecords: 'sync',
    maxBytes: 'refuses',
    cap: { config: { maxPages: 1 }, field: 'maxPages', records: 10 },
  },
  failures: () => {
    const token = 'fhir-Zq8+recognisable/token'
    const clientSecret = 'fhir-cs-Zq8&recognisable='
    return [
      {
        what: 'an OperationOutcome that quotes the token',
        run: failing(fhir, {
          baseUrl: `${misbehaving.url}/echo-auth/fhir`,
          resourceType: 'Patient',
          authentication: { type: 'bearer', token },
        }),
        secrets: [token],
      },
      {
        what: 'a token endpoint that echoes the client secret',
        run: failing(fhir, {
          baseUrl: fhirFixture.baseUrl,
          resourceType: 'Patient',
          authentication: {
            type: 'oauth2',
            clientId: 'cid',
            clientSecret,
            tokenUrl: `${apiFixture.server.url}/token?post=1`,
            tokenAuthMethod: 'client_secret_post',
          },
          retryAttempts: 0,
        }),
        secrets: [clientSecret],
      },
    ]
  },
})
