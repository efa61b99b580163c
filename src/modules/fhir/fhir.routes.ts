import { createRoute } from '@hono/zod-openapi'
import { sendFhir } from '../../http/fhir.ts'
import { OPENAPI_INFO } from '../../http/openapi-info.ts'
import { createRouter } from '../../http/router.ts'
import { fhirBase } from './fhir.base.ts'
import { capabilityStatement } from './fhir.capability.ts'
import { fhirResource } from './fhir.resource.ts'
import { fhirSubscriptionRouter } from './fhir.subscription.routes.ts'
import { groupRouter } from './group.routes.ts'

export { fhirResource }

const metadataRoute = createRoute({
  method: 'get',
  path: '/metadata',
  tags: ['FHIR'],
  summary: 'The CapabilityStatement of the FHIR face (public)',
  description: 'FHIR R4 (4.0.1). Lists exactly what `/fhir` serves. No token is needed, as on other FHIR servers.',
  responses: { 200: fhirResource('The CapabilityStatement', 'CapabilityStatement') },
})

export const fhirRouter = createRouter()
  .openapi(metadataRoute, (c) =>
    sendFhir(c, capabilityStatement(fhirBase(c), { name: OPENAPI_INFO.info.title, version: OPENAPI_INFO.info.version }), 200),
  )
  .route('/', groupRouter)
  .route('/', fhirSubscriptionRouter)
