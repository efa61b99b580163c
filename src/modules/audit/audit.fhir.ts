import type { AccessAction, AccessOutcome } from '../../db/schema-access.ts'
import type { AccessDto } from './audit.schemas.ts'
import type { AccessListing } from './audit.service.ts'

/**
 * Access records as FHIR R4 AuditEvent resources in a searchset Bundle, for a hospital's audit
 * repository (docs/audit.md "FHIR AuditEvent mapping" is the table this code implements). Codes
 * follow the IHE Basic Audit Log Patterns where they apply: a page of rows is a RESTful search
 * (action E), an export and an import are the DICOM Export/Import events (R and C).
 */

const DCM = 'http://dicom.nema.org/resources/ontology/DCM'
const EVENT_TYPE = 'http://terminology.hl7.org/CodeSystem/audit-event-type'
const RESTFUL = 'http://hl7.org/fhir/restful-interaction'
const ENTITY_TYPE = 'http://terminology.hl7.org/CodeSystem/audit-entity-type'
const OBJECT_ROLE = 'http://terminology.hl7.org/CodeSystem/object-role'
const ROLE_TYPE = 'http://terminology.hl7.org/CodeSystem/extra-security-role-type'
const SOURCE_TYPE = 'http://terminology.hl7.org/CodeSystem/security-source-type'
/** Identifier systems of this service's own ids (a URN per kind; tenants keep ids apart). */
export const ID_SYSTEM = {
  user: 'urn:panels-api:user',
  panel: 'urn:panels-api:panel',
  view: 'urn:panels-api:view',
  dataSource: 'urn:panels-api:datasource',
  request: 'urn:panels-api:request',
} as const

interface Coding {
  system: string
  code: string
  display: string
}

const REST: Coding = { system: EVENT_TYPE, code: 'rest', display: 'RESTful Operation' }
const SEARCH: Coding = { system: RESTFUL, code: 'search-type', display: 'search type' }

const EVENT: Record<AccessAction, { type: Coding; subtype: Coding[]; action: 'R' | 'E' | 'C' }> = {
  read: { type: REST, subtype: [SEARCH], action: 'E' },
  stream: { type: REST, subtype: [SEARCH], action: 'E' },
  export: { type: { system: DCM, code: '110106', display: 'Export' }, subtype: [], action: 'R' },
  import: { type: { system: DCM, code: '110107', display: 'Import' }, subtype: [], action: 'C' },
}

/** R4 AuditEvent.outcome: 0 success, 4 minor failure (the request was refused), 8 serious failure. */
const OUTCOME: Record<AccessOutcome, '0' | '4' | '8'> = {
  success: '0',
  invalid: '4',
  denied: '4',
  not_found: '4',
  cancelled: '4',
  failed: '8',
}

const OUTCOME_TEXT: Record<AccessOutcome, string> = {
  success: 'Success',
  invalid: 'Refused: invalid request',
  denied: 'Refused: access denied',
  not_found: 'Refused: not found for the caller',
  cancelled: 'Cancelled by the client after part of the rows were sent',
  failed: 'Failed on the server',
}

const base64 = (text: string) => {
  const bytes = new TextEncoder().encode(text)
  let binary = ''
  for (const b of bytes) binary += String.fromCharCode(b)
  return btoa(binary)
}

function objectEntity(system: string, id: number, display: string) {
  return {
    what: { identifier: { system, value: String(id) }, display },
    type: { system: ENTITY_TYPE, code: '2', display: 'System Object' },
    role: { system: OBJECT_ROLE, code: '4', display: 'Domain Resource' },
  }
}

/** One access record as an R4 AuditEvent. */
export function toAuditEvent(r: AccessDto) {
  const event = EVENT[r.action]
  const query = JSON.stringify(r.query)
  const entity: Record<string, unknown>[] = []
  if (r.panelId !== null) entity.push(objectEntity(ID_SYSTEM.panel, r.panelId, `Panel ${r.panelId}`))
  if (r.viewId !== null) entity.push(objectEntity(ID_SYSTEM.view, r.viewId, `View ${r.viewId}`))
  if (r.dataSourceId !== null) {
    entity.push(objectEntity(ID_SYSTEM.dataSource, r.dataSourceId, `Data source ${r.dataSourceId}`))
  }
  entity.push({
    type: { system: ENTITY_TYPE, code: '2', display: 'System Object' },
    role: { system: OBJECT_ROLE, code: '24', display: 'Query' },
    description: `${r.path} (${r.rowCount} rows)`,
    query: base64(query),
    detail: [
      { type: 'query', valueString: query },
      { type: 'rowCount', valueString: String(r.rowCount) },
      { type: 'path', valueString: r.path },
      ...(r.userAgent ? [{ type: 'userAgent', valueString: r.userAgent }] : []),
    ],
  })
  return {
    resourceType: 'AuditEvent' as const,
    id: String(r.id),
    type: event.type,
    ...(event.subtype.length > 0 ? { subtype: event.subtype } : {}),
    action: event.action,
    recorded: r.at,
    outcome: OUTCOME[r.outcome],
    outcomeDesc:
      r.outcome === 'success'
        ? OUTCOME_TEXT.success
        : `${OUTCOME_TEXT[r.outcome]} (HTTP ${r.status}${r.errorCode ? ` ${r.errorCode}` : ''})`,
    agent: [
      {
        type: { coding: [{ system: ROLE_TYPE, code: 'humanuser', display: 'human user' }] },
        who: { identifier: { system: ID_SYSTEM.user, value: r.userId } },
        requestor: true,
        ...(r.ip ? { network: { address: r.ip, type: '2' } } : {}),
      },
    ],
    source: {
      site: r.tenantId,
      observer: { identifier: { system: ID_SYSTEM.request, value: r.requestId }, display: 'Panels API' },
      type: [{ system: SOURCE_TYPE, code: '4', display: 'Application Server' }],
    },
    entity,
  }
}

/**
 * A searchset Bundle of one page of records: `total` counts every match, `link` names this page
 * and the next one (the same query with the next `offset`).
 */
export function toAuditBundle(page: AccessListing, requestUrl: string) {
  const self = new URL(requestUrl)
  const link = [{ relation: 'self', url: self.toString() }]
  if (page.hasMore) {
    const next = new URL(requestUrl)
    next.searchParams.delete('page')
    next.searchParams.set('offset', String(page.offset + page.limit))
    next.searchParams.set('limit', String(page.limit))
    link.push({ relation: 'next', url: next.toString() })
  }
  return {
    resourceType: 'Bundle' as const,
    type: 'searchset' as const,
    total: page.total,
    link,
    entry: page.records.map((r) => ({ resource: toAuditEvent(r), search: { mode: 'match' as const } })),
  }
}
