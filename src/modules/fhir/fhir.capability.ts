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
  extension?: unknown[]
}

/** The served resources, in the order the statement lists them. */
export const CAPABILITY_RESOURCES: readonly CapabilityResource[] = [
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
        resource: CAPABILITY_RESOURCES,
      },
    ],
  }
}
