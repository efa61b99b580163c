import { BACKPORT, topicCanonical } from '../fhir-topic/fhir.topic.ts'

/**
 * What the /fhir face serves, as the entries of its R4 CapabilityStatement (`GET /fhir/metadata`).
 * Each feature of the face lists its resource below, so the statement names exactly what is served
 * and nothing else.
 */
export interface CapabilityResource {
  type: string
  profile?: string
  interaction: { code: 'read' | 'search-type' | 'create' | 'delete' | 'update' }[]
  searchParam?: { name: string; type: 'string' | 'token' | 'number' | 'date' | 'reference' | 'uri'; documentation?: string }[]
  operation?: { name: string; definition: string; documentation?: string }[]
  /** The entry's extensions; a function of the face's base (`…/fhir`) when they name its URLs. */
  extension?: unknown[] | ((base: string) => unknown[])
}

/** Patient lists (docs/fhir.md "Patient lists"): each view the caller may read is a Group. */
const GROUP: CapabilityResource = {
  type: 'Group',
  interaction: [{ code: 'read' }, { code: 'search-type' }],
  searchParam: [
    {
      name: 'name',
      type: 'string',
      documentation: 'Starts with, case- and accent-insensitive; :exact and :contains too',
    },
    { name: 'type', type: 'token', documentation: 'person: every list (each is a Group of type person)' },
    { name: '_summary', type: 'token', documentation: 'true (the form searches answer: no members) or count' },
    { name: '_count', type: 'number', documentation: 'Groups per page: 50 by default, at most 1000' },
    { name: '_offset', type: 'number', documentation: 'Paging: the Groups skipped (the next/previous links carry it)' },
  ],
  operation: [
    {
      name: 'getpage',
      definition: 'http://www.fhir.org/guides/argonaut/patient-list/OperationDefinition/getpage',
      documentation:
        'Argonaut Patient Lists: offset and count (GET query or POST Parameters); the Group with that page of members, the next and previous pages as extensions',
    },
  ],
}

const OPERATIONS = 'http://hl7.org/fhir/uv/subscriptions-backport/OperationDefinition'

/** The served resources, in the order the statement lists them. */
export const CAPABILITY_RESOURCES: readonly CapabilityResource[] = [
  GROUP,
  {
    type: 'Subscription',
    profile: BACKPORT.subscriptionProfile,
    interaction: [{ code: 'create' }, { code: 'read' }, { code: 'search-type' }, { code: 'delete' }],
    operation: [
      { name: 'status', definition: `${OPERATIONS}/backport-subscription-status` },
      { name: 'events', definition: `${OPERATIONS}/backport-subscription-events` },
    ],
    extension: (base) => [{ url: BACKPORT.topicCanonical, valueCanonical: topicCanonical(base) }],
  },
  {
    type: 'ViewDefinition',
    profile: 'https://sql-on-fhir.org/ig/StructureDefinition/ViewDefinition',
    interaction: [{ code: 'read' }, { code: 'search-type' }, { code: 'create' }, { code: 'update' }, { code: 'delete' }],
    searchParam: [
      { name: 'name', type: 'string', documentation: 'The view’s name, exactly' },
      { name: 'resource', type: 'token', documentation: 'The resource type the view reads' },
    ],
    operation: [
      {
        name: 'viewdefinition-run',
        definition: 'http://sql-on-fhir.org/OperationDefinition/$viewdefinition-run',
        documentation:
          'POST /fhir/ViewDefinition/$viewdefinition-run, /fhir/ViewDefinition/{id}/$viewdefinition-run: rows as json, ndjson or csv.',
      },
      {
        name: 'viewdefinition-export',
        definition: 'http://sql-on-fhir.org/OperationDefinition/$viewdefinition-export',
        documentation:
          'POST /fhir/$viewdefinition-export, /fhir/ViewDefinition/$viewdefinition-export, /fhir/ViewDefinition/{id}/$viewdefinition-export: asynchronous; ndjson or csv files, one per view.',
      },
    ],
  },
]

/** The CapabilityStatement of the face, `base` being the face's absolute URL (`…/fhir`). */
export function capabilityStatement(base: string, software: { name: string; version: string }, extension: unknown[] = []) {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: '2026-11-27',
    kind: 'instance',
    software,
    implementation: { description: 'Panel management service: patient lists and their membership', url: base },
    fhirVersion: '4.0.1',
    format: ['json', 'application/fhir+json'],
    rest: [
      {
        mode: 'server',
        security: {
          service: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/restful-security-service', code: 'OAuth' }] }],
          description: 'A bearer token (HS256 JWT with tenantId and userId claims), the same as the JSON API.',
        },
        ...(extension.length ? { extension } : {}),
        resource: CAPABILITY_RESOURCES.map((r) =>
          typeof r.extension === 'function' ? { ...r, extension: r.extension(base) } : r,
        ),
      },
    ],
  }
}
