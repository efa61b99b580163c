import { beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { authHeaders } from '../../helpers/auth.ts'

/**
 * The FHIR face's frame (docs/fhir.md): a public CapabilityStatement, the /api bearer token on
 * everything else, and errors as OperationOutcome with the HTTP status, in application/fhir+json.
 */

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp({ env: { PUBLIC_BASE_URL: 'https://panels.example.org/' } })
})

describe('the FHIR face', () => {
  it('answers its CapabilityStatement without a token', async () => {
    const res = await t.app.request('/fhir/metadata')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    const cs = await res.json()
    expect(cs).toMatchObject({
      resourceType: 'CapabilityStatement',
      status: 'active',
      kind: 'instance',
      fhirVersion: '4.0.1',
      implementation: { url: 'https://panels.example.org/fhir' },
      rest: [{ mode: 'server' }],
    })
    expect(cs.format).toContain('json')
  })

  it('refuses a request without a bearer token with a 401 OperationOutcome', async () => {
    const res = await t.app.request('/fhir/Group')
    expect(res.status).toBe(401)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
    const body = await res.json()
    expect(body.resourceType).toBe('OperationOutcome')
    expect(body.issue[0]).toMatchObject({ severity: 'error', code: 'login' })
    expect(body.issue[0].details.coding[0]).toMatchObject({ code: 'UNAUTHORIZED' })
  })

  it('refuses an expired token the same way', async () => {
    const { signRaw } = await import('../../helpers/auth.ts')
    const token = await signRaw({ tenantId: 't1', userId: 'u1', exp: Math.floor(Date.parse('2026-01-01T11:00:00Z') / 1000) })
    const res = await t.app.request('/fhir/Group', { headers: { Authorization: `Bearer ${token}` } })
    expect(res.status).toBe(401)
    expect((await res.json()).issue[0].code).toBe('login')
  })

  it('answers an unknown FHIR route with a 404 OperationOutcome', async () => {
    const res = await t.app.request('/fhir/Nothing/1', { headers: await authHeaders('t1', 'u1') })
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toBe('application/fhir+json')
    expect((await res.json()).issue[0]).toMatchObject({ code: 'not-found' })
  })

  it('answers a malformed FHIR JSON body with a 400 OperationOutcome', async () => {
    const res = await t.app.request('/fhir/Subscription', {
      method: 'POST',
      headers: { ...(await authHeaders('t1', 'u1')), 'Content-Type': 'application/fhir+json' },
      body: '{"resourceType":',
    })
    expect(res.status).toBe(400)
    expect((await res.json()).issue[0]).toMatchObject({ code: 'structure' })
  })

  it('leaves the JSON API errors in the contract shape', async () => {
    const res = await t.app.request('/api/panels?tenantId=t1&userId=u1')
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ statusCode: 401, code: 'UNAUTHORIZED' })
  })
})
