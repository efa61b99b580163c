import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTestApp } from '../../helpers/app.ts'
import { startFhirServer } from '../../helpers/fhir-server.ts'
import { clientFor } from '../../helpers/http.ts'

/**
 * Base columns with join(), lowBoundary() and highBoundary() (src/engine/fhirpath/functions.ts)
 * over records synced from a FHIR server: the cells SQL-on-FHIR expects (the resources are those
 * of the official fn_join.json and fn_boundary.json tests). A join over no names is `""`, and
 * cells keep it (exact values).
 */

const RESOURCES = {
  Patient: [
    { resourceType: 'Patient', id: 'p1', birthDate: '1970-06', name: [{ use: 'official', given: ['p1.g1', 'p1.g2'] }] },
    { resourceType: 'Patient', id: 'p2', name: [{ use: 'nickname', given: ['Addie'] }] },
  ],
  Observation: [
    { resourceType: 'Observation', id: 'o1', code: { text: 'code' }, status: 'final', valueQuantity: { value: 1.0 } },
    { resourceType: 'Observation', id: 'o2', code: { text: 'code' }, status: 'final', valueDateTime: '2010-10-10' },
    { resourceType: 'Observation', id: 'o4', code: { text: 'code' }, status: 'final', valueTime: '12:34:00' },
  ],
}

let fhir: Awaited<ReturnType<typeof startFhirServer>>
beforeAll(async () => {
  fhir = await startFhirServer({ resources: RESOURCES })
})
afterAll(() => fhir.close())

describe('GET /api/panels/{panelId}/rows (base columns with join and the boundary functions)', () => {
  it('holds the joined names and the boundaries of decimals, date-times, dates and times', async () => {
    const t = await makeTestApp()
    const alice = clientFor(t.app, 'tenant-a', 'alice')
    const panelId = (await alice.post('/api/panels', { name: 'Boundaries', tenantId: 'tenant-a', userId: 'alice' })).body.id
    const columns: [string, string, string][] = [
      ['Key', 'getResourceKey()', 'text'],
      ['Given', "name.given.join(', ')", 'text'],
      ['Given plain', 'name.given.join()', 'text'],
      ['Low', 'value.ofType(Quantity).value.lowBoundary()', 'number'],
      ['High', 'value.ofType(Quantity).value.highBoundary()', 'number'],
      ['From', 'value.ofType(dateTime).lowBoundary()', 'text'],
      ['To', 'value.ofType(dateTime).highBoundary()', 'text'],
      ['From instant', 'value.ofType(dateTime).lowBoundary()', 'datetime'],
      ['To instant', 'value.ofType(dateTime).highBoundary()', 'datetime'],
      ['Born from', 'birthDate.lowBoundary()', 'date'],
      ['Born to', 'birthDate.highBoundary()', 'date'],
      ['Time from', 'value.ofType(time).lowBoundary()', 'text'],
      ['Time to', 'value.ofType(time).highBoundary()', 'text'],
    ]
    for (const [name, fhirPath, type] of columns) {
      const res = await alice.post(`/api/panels/${panelId}/columns/base`, { name, fhirPath, type })
      expect(res.status, JSON.stringify(res.body)).toBe(201)
    }
    const source = await alice.post(`/api/panels/${panelId}/datasources`, {
      type: 'fhir',
      config: { baseUrl: fhir.baseUrl, resourceTypes: ['Patient', 'Observation'] },
    })
    expect(source.body).toMatchObject({ syncStatus: 'success' })

    const res = await alice.get(`/api/panels/${panelId}/rows?sort=Key&order=asc`)
    expect(res.status).toBe(200)
    const byKey = Object.fromEntries(
      (res.body.data as Record<string, unknown>[]).map((row) => [
        row.Key,
        Object.fromEntries(columns.map(([name]) => [name, row[name]])),
      ]),
    )
    const none = Object.fromEntries(columns.map(([name]) => [name, null]))
    expect(byKey['Patient/p1']).toEqual({
      ...none,
      Key: 'Patient/p1',
      Given: 'p1.g1, p1.g2',
      'Given plain': 'p1.g1p1.g2',
      'Born from': '1970-06-01',
      'Born to': '1970-06-30',
    })
    expect(byKey['Patient/p2']).toMatchObject({ Given: 'Addie', 'Given plain': 'Addie' })
    expect(byKey['Observation/o1']).toMatchObject({
      Given: '',
      'Given plain': '',
      Low: 0.95,
      High: 1.05,
      From: null,
      'Time from': null,
    })
    expect(byKey['Observation/o2']).toMatchObject({
      Low: null,
      From: '2010-10-10T00:00:00.000+14:00',
      To: '2010-10-10T23:59:59.999-12:00',
      // A datetime cell is the UTC instant: the offsets make the day's full span.
      'From instant': '2010-10-09T10:00:00.000Z',
      'To instant': '2010-10-11T11:59:59.999Z',
    })
    expect(byKey['Observation/o4']).toMatchObject({ From: null, 'Time from': '12:34:00.000', 'Time to': '12:34:00.999' })
  })
})

describe('POST /api/formulas/preview (FHIRPATH with join and the boundary functions)', () => {
  it('answers as a base column with the same expression', async () => {
    const t = await makeTestApp()
    const alice = clientFor(t.app, 'tenant-a', 'alice')
    const preview = async (formula: string, record: object) => {
      const res = await alice.post('/api/formulas/preview', { formula, values: {}, record })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return res.body.value
    }
    const [p1] = RESOURCES.Patient
    const [o1, o2] = RESOURCES.Observation
    expect(await preview(`FHIRPATH("name.given.join(', ')")`, p1)).toBe('p1.g1, p1.g2')
    expect(await preview(`FHIRPATH("name.given.join(', ')")`, { resourceType: 'Patient', id: 'p3' })).toBe('')
    expect(await preview('FHIRPATH("value.ofType(Quantity).value.lowBoundary()")', o1)).toBe(0.95)
    expect(await preview('FHIRPATH("value.ofType(dateTime).lowBoundary()")', o2)).toBe('2010-10-10T00:00:00.000+14:00')
  })
})
