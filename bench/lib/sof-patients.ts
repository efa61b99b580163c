/**
 * Synthetic R4 Patients for `bench:sof` (issue 14 point 6): 2–3 names of 1–3 given names,
 * 1–3 telecoms, 1–2 addresses, identifiers and extensions, varied by index, deterministic.
 */
const FAMILY = ['Smith', 'Jones', 'Garcia', 'Nguyen', 'Okafor', 'Rossi', 'Tanaka']
const GIVEN = ['Ada', 'Grace', 'Alan', 'Maria', 'Chidi', 'Ines', 'Kenji', 'Zofia', 'Li']
const CITY = ['Leeds', 'Lyon', 'Porto', 'Osaka', 'Lagos']

export function sofPatient(i: number) {
  const names = 2 + (i % 2)
  const telecoms = 1 + (i % 3)
  const addresses = 1 + (i % 2)
  return {
    resourceType: 'Patient',
    id: `pat-${i}`,
    meta: { versionId: '1', lastUpdated: '2026-11-01T10:00:00.000Z' },
    extension: [
      { url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex', valueCode: i % 2 ? 'F' : 'M' },
      {
        url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race',
        extension: [{ url: 'ombCategory', valueCoding: { system: 'urn:oid:2.16.840.1.113883.6.238', code: '2106-3' } }],
      },
    ],
    identifier: [
      { system: 'urn:oid:2.16.840.1.113883.19.5', value: `MRN${1_000_000 + i}` },
      { system: 'http://hl7.org/fhir/sid/us-ssn', value: String(100_000_000 + i) },
    ],
    active: i % 17 !== 0,
    name: Array.from({ length: names }, (_, n) => ({
      use: n === 0 ? 'official' : 'usual',
      family: FAMILY[(i + n) % FAMILY.length],
      given: Array.from({ length: 1 + ((i + n) % 3) }, (_, g) => GIVEN[(i + n + g) % GIVEN.length]),
    })),
    telecom: Array.from({ length: telecoms }, (_, t) => ({
      system: ['phone', 'email', 'sms'][t],
      value: t === 1 ? `p${i}@example.org` : `+44 113 496 ${String((i + t) % 10000).padStart(4, '0')}`,
      use: t === 0 ? 'home' : 'mobile',
    })),
    gender: i % 2 ? 'female' : 'male',
    birthDate: `19${40 + (i % 60)}-0${1 + (i % 9)}-1${i % 10}`,
    address: Array.from({ length: addresses }, (_, a) => ({
      use: a === 0 ? 'home' : 'work',
      line: [`${i % 999} High Street`],
      city: CITY[(i + a) % CITY.length],
      postalCode: String(10000 + (i % 89999)),
      country: 'GB',
    })),
  }
}

export type SofPatient = ReturnType<typeof sofPatient>
