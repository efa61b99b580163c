import type { IncomingMessage, ServerResponse } from 'node:http'
import { type FixtureServer, startJsonServer } from './servers.ts'

type Resource = Record<string, unknown> & { resourceType: string; id: string }

const FAMILIES = ['Smith', 'Müller', 'García', 'Nguyen', 'Okafor', 'Kowalski', 'Rossi', 'Tanaka']
const GIVEN = ['Ada', 'Grace', 'Alan', 'Maria', 'Chidi', 'Ines', 'Kenji', 'Zofia']

/** `n` realistic R4 Patients (US Core style): names, gender, birthDate, extensions, identifiers. */
export function patients(n: number): Resource[] {
  return Array.from({ length: n }, (_, i) => ({
    resourceType: 'Patient',
    id: `pat-${i + 1}`,
    meta: { versionId: '1', lastUpdated: '2025-06-01T10:00:00.000+00:00' },
    extension: [
      {
        url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex',
        valueCode: i % 2 === 0 ? 'F' : 'M',
      },
      {
        url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race',
        extension: [
          { url: 'ombCategory', valueCoding: { system: 'urn:oid:2.16.840.1.113883.6.238', code: '2106-3', display: 'White' } },
          { url: 'text', valueString: 'White' },
        ],
      },
    ],
    identifier: [{ system: 'http://hospital.example.org/mrn', value: `MRN${String(100000 + i)}` }],
    active: true,
    name: [{ use: 'official', family: FAMILIES[i % FAMILIES.length], given: [GIVEN[i % GIVEN.length], 'Q.'] }],
    telecom: [{ system: 'phone', value: `555-01${String(i % 100).padStart(2, '0')}`, use: 'home' }],
    gender: i % 2 === 0 ? 'female' : 'male',
    birthDate: `${1940 + (i % 60)}-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`,
    address: [{ line: [`${i + 1} Main St`], city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' }],
  }))
}

/** `n` vital-sign Observations (heart rate, body weight) of the first patients, with valueQuantity. */
export function observations(n: number, patientCount = 10): Resource[] {
  return Array.from({ length: n }, (_, i) => {
    const weight = i % 2 === 1
    return {
      resourceType: 'Observation',
      id: `obs-${i + 1}`,
      status: 'final',
      category: [
        {
          coding: [
            { system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs', display: 'Vital Signs' },
          ],
        },
      ],
      code: {
        coding: [
          weight
            ? { system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }
            : { system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' },
        ],
        text: weight ? 'Body weight' : 'Heart rate',
      },
      subject: { reference: `Patient/pat-${(i % patientCount) + 1}` },
      effectiveDateTime: `2025-05-${String((i % 28) + 1).padStart(2, '0')}T08:30:00Z`,
      valueQuantity: weight
        ? { value: 60 + (i % 40) + 0.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' }
        : { value: 60 + (i % 40), unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
    }
  })
}

export const outcome = (severity: string, code: string, diagnostics: string) => ({
  resourceType: 'OperationOutcome',
  issue: [{ severity, code, diagnostics }],
})

export interface FhirServerState {
  resources: Record<string, Resource[]>
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string
  /** The origin written into next links (default: this server's own). */
  nextOrigin?: string
  /** Requests answered 503 before the server recovers. */
  unavailable: number
  /** Answer 200 with an OperationOutcome instead of a Bundle. */
  outcomeWith200?: boolean
  /** Answer a bare resource instead of a Bundle. */
  notABundle?: boolean
}

const KNOWN_PARAMS = new Set(['_count', '_getpagesoffset', '_include', '_sort', 'gender', 'code', 'status', '_lastUpdated'])

/**
 * A FHIR R4 server on loopback answering searches `GET /fhir/{type}?…` with `searchset` Bundles of
 * `_count` entries (default 10) and HAPI-style next links (`_getpagesoffset`), filtering by
 * `gender`; `_include=Observation:subject` adds the patients as `include` entries. Errors come
 * as OperationOutcome like real servers send them (unknown type or parameter, missing token).
 */
export async function startFhirServer(initial: Partial<FhirServerState> = {}) {
  const state: FhirServerState = {
    resources: { Patient: patients(25), Observation: observations(12) },
    unavailable: 0,
    ...initial,
  }
  const server: FixtureServer = await startJsonServer((req, res) => handle(state, req, res))
  return { server, state, baseUrl: `${server.url}/fhir`, close: () => server.close() }
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/fhir+json;charset=utf-8' })
  res.end(JSON.stringify(body))
}

function handle(state: FhirServerState, req: IncomingMessage, res: ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://x')
  const self = `http://127.0.0.1:${req.socket.localPort}`
  if (state.unavailable > 0) {
    state.unavailable--
    res.writeHead(503, { 'retry-after': '0' })
    return void res.end('busy')
  }
  if (state.token && req.headers.authorization !== `Bearer ${state.token}`) {
    return send(res, 401, outcome('error', 'login', 'Authentication required: missing or invalid bearer token'))
  }
  if (!String(req.headers.accept).includes('application/fhir+json')) {
    return send(res, 406, outcome('error', 'not-supported', 'Only application/fhir+json is served'))
  }
  const type = /^\/fhir\/([A-Za-z]+)$/.exec(url.pathname)?.[1]
  const all = type ? state.resources[type] : undefined
  if (!type || !all) return send(res, 404, outcome('error', 'not-found', `Unknown resource type '${type ?? url.pathname}'`))
  for (const name of url.searchParams.keys()) {
    if (!KNOWN_PARAMS.has(name)) {
      return send(res, 400, outcome('error', 'processing', `Unknown search parameter '${name}' for resource type '${type}'`))
    }
  }
  if (state.outcomeWith200) return send(res, 200, outcome('fatal', 'exception', 'Search backend unavailable: index rebuilding'))
  if (state.notABundle) return send(res, 200, all[0])
  const gender = url.searchParams.get('gender')
  const matches = gender ? all.filter((r) => r.gender === gender) : all
  const count = Number(url.searchParams.get('_count') ?? 10)
  const offset = Number(url.searchParams.get('_getpagesoffset') ?? 0)
  const page = matches.slice(offset, offset + count)
  const entry: Record<string, unknown>[] = page.map((resource) => ({
    fullUrl: `${self}/fhir/${type}/${resource.id}`,
    resource,
    search: { mode: 'match' },
  }))
  if (type === 'Observation' && url.searchParams.get('_include') === 'Observation:subject') {
    const refs = new Set(page.map((o) => (o.subject as { reference: string }).reference))
    for (const p of state.resources.Patient ?? []) {
      if (refs.has(`Patient/${p.id}`))
        entry.push({ fullUrl: `${self}/fhir/Patient/${p.id}`, resource: p, search: { mode: 'include' } })
    }
    entry.push({ resource: outcome('warning', 'informational', '_include results are capped'), search: { mode: 'outcome' } })
  }
  const link = [{ relation: 'self', url: `${self}${url.pathname}${url.search}` }]
  if (offset + count < matches.length) {
    const next = new URL(`${state.nextOrigin ?? self}${url.pathname}${url.search}`)
    next.searchParams.set('_getpagesoffset', String(offset + count))
    next.searchParams.set('_count', String(count))
    link.push({ relation: 'next', url: next.href })
  }
  send(res, 200, {
    resourceType: 'Bundle',
    id: `search-${offset}`,
    meta: { lastUpdated: '2025-06-01T10:00:00.000+00:00' },
    type: 'searchset',
    total: matches.length,
    link,
    entry,
  })
}
