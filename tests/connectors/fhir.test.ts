import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import fhir, { FhirConfig, outcomeText, searchUrl } from '../../src/connectors/fhir.ts'
import type { ConnectorContext } from '../../src/connectors/types.ts'
import { createGuardedFetch } from '../../src/lib/egress/guarded-fetch.ts'
import { readAllBatches } from '../helpers/connectors.ts'
import { observations, patients, startFhirServer } from '../helpers/fhir-server.ts'

let fx: Awaited<ReturnType<typeof startFhirServer>>

beforeAll(async () => {
  fx = await startFhirServer()
})
afterAll(() => fx.close())
beforeEach(() => {
  Object.assign(fx.state, { token: undefined, nextOrigin: undefined, unavailable: 0, outcomeWith200: false, notABundle: false })
})

async function read(config: Record<string, unknown>, overrides: Partial<ConnectorContext> = {}) {
  const before = fx.server.requests.length
  const result = await readAllBatches(fhir, { baseUrl: fx.baseUrl, ...config }, overrides)
  return { ...result, urls: fx.server.requests.slice(before).map((r) => r.url) }
}

describe('fhir connector: search', () => {
  it('reads every page of a search, following Bundle.link next, keyed Type/id', async () => {
    const { records, urls, report } = await read({ resourceType: 'Patient', pageSize: 10 })
    expect(urls).toEqual([
      '/fhir/Patient?_count=10',
      '/fhir/Patient?_count=10&_getpagesoffset=10',
      '/fhir/Patient?_count=10&_getpagesoffset=20',
    ])
    expect(records).toHaveLength(25)
    expect(records.map((r) => r.key)).toEqual(patients(25).map((p) => `Patient/${p.id}`))
    expect(records[1].data).toEqual(patients(25)[1])
    expect(records[1].data).toMatchObject({
      name: [{ family: 'Müller', given: ['Grace', 'Q.'] }],
      birthDate: '1941-02-02',
      extension: [{ valueCode: 'M' }, { extension: [{ valueCoding: { code: '2106-3' } }, { valueString: 'White' }] }],
    })
    expect(report.truncated).toEqual([])
  })

  it('sends searchParams given as a query string or as an object (lists repeat)', async () => {
    const text = await read({ resourceType: 'Patient', searchParams: '?gender=female&_sort=birthdate', pageSize: 50 })
    expect(text.urls[0]).toBe('/fhir/Patient?gender=female&_sort=birthdate&_count=50')
    expect(text.records).toHaveLength(13)
    expect(text.records.every((r) => r.data.gender === 'female')).toBe(true)
    const object = await read({ resourceType: 'Patient', searchParams: { gender: 'male', _lastUpdated: ['gt2020', 'lt2030'] } })
    expect(object.urls[0]).toBe('/fhir/Patient?gender=male&_lastUpdated=gt2020&_lastUpdated=lt2030')
    expect(object.records).toHaveLength(12)
  })

  it('keeps only the searched type: included resources and OperationOutcome entries are skipped', async () => {
    const { records } = await read({
      resourceType: 'Observation',
      searchParams: { _include: 'Observation:subject' },
      pageSize: 5,
    })
    expect(records.map((r) => r.key)).toEqual(observations(12).map((o) => `Observation/${o.id}`))
    expect(records[1].data.valueQuantity).toEqual({ value: 61.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' })
    expect(records[0].data.subject).toEqual({ reference: 'Patient/pat-1' })
  })

  it('gathers small pages into batches of 500, one type at a time, so a write carries a batch, not a page', async () => {
    const { batches, urls } = await read({ resourceTypes: ['Patient', 'Observation'], pageSize: 5 })
    expect(urls).toHaveLength(5 + 3)
    expect(batches.map((b) => b.length)).toEqual([25, 12])
    const cut = await read({ resourceType: 'Patient', pageSize: 5, maxPages: 2 })
    expect(cut.batches.map((b) => b.length)).toEqual([10])
  })

  it('reads several resource types one after the other', async () => {
    const { records } = await read({ resourceTypes: ['Patient', 'Observation'], pageSize: 20 })
    expect(records).toHaveLength(37)
    expect(records[0].key).toBe('Patient/pat-1')
    expect(records[25].key).toBe('Observation/obs-1')
  })

  it('stops at maxPages per type and reports it only when there were more pages', async () => {
    const cut = await read({ resourceTypes: ['Patient', 'Observation'], pageSize: 10, maxPages: 2 })
    expect(cut.records).toHaveLength(32)
    expect(cut.report.truncated).toEqual(['Stopped Patient at maxPages (2 pages); the FHIR server had more pages'])
    const whole = await read({ resourceType: 'Patient', pageSize: 10, maxPages: 3 })
    expect(whole.records).toHaveLength(25)
    expect(whole.report.truncated).toEqual([])
  })

  it('sends the authentication and retries a busy server', async () => {
    fx.state.token = 'fhir-token'
    fx.state.unavailable = 2
    const { records } = await read({
      resourceType: 'Observation',
      pageSize: 100,
      authentication: { type: 'bearer', token: 'fhir-token' },
      retryDelay: 5,
    })
    expect(records).toHaveLength(12)
    await expect(read({ resourceType: 'Observation' })).rejects.toThrow(
      'FHIR server responded 401 with an OperationOutcome: error: Authentication required: missing or invalid bearer token',
    )
  })
})

describe('fhir connector: failures', () => {
  it('surfaces the OperationOutcome of a refused search', async () => {
    await expect(read({ resourceType: 'Patient', searchParams: 'bogus=1' })).rejects.toThrow(
      "FHIR server responded 400 with an OperationOutcome: error: Unknown search parameter 'bogus' for resource type 'Patient'",
    )
    await expect(read({ resourceType: 'Medication' })).rejects.toThrow("error: Unknown resource type 'Medication'")
  })

  it('surfaces an OperationOutcome answered with 200', async () => {
    fx.state.outcomeWith200 = true
    await expect(read({ resourceType: 'Patient' })).rejects.toThrow(
      'FHIR server answered an OperationOutcome: fatal: Search backend unavailable: index rebuilding',
    )
  })

  it('refuses an answer that is not a Bundle', async () => {
    fx.state.notABundle = true
    await expect(read({ resourceType: 'Patient' })).rejects.toThrow(
      'The FHIR server answered a Patient, not a Bundle, to the Patient search',
    )
  })

  it('refuses a next link to another origin', async () => {
    fx.state.nextOrigin = fx.server.url.replace('127.0.0.1', 'localhost')
    await expect(read({ resourceType: 'Patient', pageSize: 10 })).rejects.toThrow(
      /The FHIR server's next link for Patient points to another origin \(http:\/\/localhost:\d+\); only http:\/\/127\.0\.0\.1:\d+ is followed/,
    )
  })
})

describe('fhir connector: safety', () => {
  it('counts the Bundles against the sync byte limit', async () => {
    await expect(
      read({ resourceType: 'Patient', pageSize: 10 }, { limits: { maxBytes: 20_000, maxRecords: 1000 } }),
    ).rejects.toThrow('FHIR server responses exceed the limit of 20000 bytes read in one synchronisation')
  })

  it('is refused a loopback server when private networks are not allowed', async () => {
    const before = fx.server.requests.length
    await expect(
      read({ resourceType: 'Patient' }, { fetch: createGuardedFetch({ fetch, allowPrivate: false }) }),
    ).rejects.toThrow(/Refusing to connect to 127\.0\.0\.1: it is a loopback address/)
    expect(fx.server.requests.length).toBe(before)
  })
})

describe('fhir config', () => {
  it('names each bad field', () => {
    const r = FhirConfig.safeParse({ baseUrl: 'nope', pageSize: 0, resourceTypes: ['patient'], searchParams: 3 })
    expect(r.success).toBe(false)
    expect(r.error?.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'baseUrl',
      'pageSize',
      'resourceTypes.0',
      'searchParams',
    ])
    const none = FhirConfig.safeParse({ baseUrl: 'https://fhir.test/r4' })
    expect(none.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['resourceType', 'required (or resourceTypes, a list of them)'],
    ])
  })

  it('builds the search URL from base URL, type, parameters and _count', () => {
    const config = FhirConfig.parse({
      baseUrl: 'https://fhir.test/r4/',
      resourceType: 'Patient',
      searchParams: 'name=Ada',
      pageSize: 5,
    })
    expect(searchUrl(config, 'Patient').href).toBe('https://fhir.test/r4/Patient?name=Ada&_count=5')
  })

  it('reads the text of an OperationOutcome', () => {
    expect(
      outcomeText('{"resourceType":"OperationOutcome","issue":[{"severity":"error","details":{"text":"Bad"}},{"code":"x"}]}'),
    ).toBe('error: Bad; x')
    expect(outcomeText('{"resourceType":"Bundle"}')).toBeUndefined()
    expect(outcomeText('not json')).toBeUndefined()
  })
})
