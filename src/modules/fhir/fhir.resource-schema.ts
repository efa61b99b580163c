import { z } from '@hono/zod-openapi'

/** An R4 resource in an OpenAPI response: FHIR JSON, described but not re-validated here. */
export const fhirResource = (description: string, resourceType: string) => ({
  description,
  content: {
    'application/fhir+json': {
      schema: z
        .object({ resourceType: z.literal(resourceType) })
        .passthrough()
        .openapi(`Fhir${resourceType}`),
    },
  },
})
