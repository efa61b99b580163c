import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A synthetic R4 Patient, realistic in shape (names, telecom, address, extensions). */
export function patient(i: number) {
  return {
    resourceType: 'Patient',
    id: `pat-${i}`,
    meta: { versionId: '1', lastUpdated: '2026-11-01T10:00:00.000Z' },
    identifier: [{ system: 'urn:oid:2.16.840.1.113883.19.5', value: `MRN${1_000_000 + i}` }],
    active: i % 17 !== 0,
    name: [{ use: 'official', family: ['Smith', 'Jones', 'Garcia', 'Nguyen'][i % 4], given: [`Given${i % 997}`, 'M'] }],
    telecom: [{ system: 'phone', value: `+44 113 496 ${String(i % 10000).padStart(4, '0')}`, use: 'home' }],
    gender: i % 2 ? 'female' : 'male',
    birthDate: `19${40 + (i % 60)}-0${1 + (i % 9)}-1${i % 10}`,
    address: [{ city: ['Leeds', 'Lyon', 'Porto'][i % 3], postalCode: String(10000 + (i % 89999)), country: 'GB' }],
    extension: [
      {
        url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex',
        valueCode: i % 2 ? 'F' : 'M',
      },
    ],
  }
}

/**
 * A loopback FHIR server answering `GET /Patient?_count=N` with searchset Bundles of `total`
 * Patients, `link[next]` pointing at the following page (`_offset`).
 */
export async function startFhirPatientServer(total: number) {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname !== '/Patient') {
      res.writeHead(404, { 'content-type': 'application/fhir+json' })
      return res.end(JSON.stringify({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'not-found' }] }))
    }
    const count = Number(url.searchParams.get('_count') ?? 100)
    const offset = Number(url.searchParams.get('_offset') ?? 0)
    const entries = []
    for (let i = offset; i < Math.min(offset + count, total); i++) {
      entries.push({ fullUrl: `${base}/Patient/pat-${i}`, resource: patient(i), search: { mode: 'match' } })
    }
    const link = [{ relation: 'self', url: `${base}/Patient?_count=${count}&_offset=${offset}` }]
    if (offset + count < total) link.push({ relation: 'next', url: `${base}/Patient?_count=${count}&_offset=${offset + count}` })
    res.writeHead(200, { 'content-type': 'application/fhir+json' })
    res.end(JSON.stringify({ resourceType: 'Bundle', type: 'searchset', total, link, entry: entries }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url: base,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
