import { z } from '@hono/zod-openapi'
import type { viewDefinitions } from '../../db/schema.ts'

export type ViewDefinitionRow = typeof viewDefinitions.$inferSelect

/**
 * A ViewDefinition on the wire: the SQL-on-FHIR resource, checked by the engine (src/engine/sof)
 * rather than here, so its messages name the place in the view (`select[1].column[0].path`).
 */
export const ViewDefinitionBody = z.record(z.string(), z.unknown()).openapi('ViewDefinition', {
  description: 'A SQL-on-FHIR v2 ViewDefinition (https://sql-on-fhir.org/ig/StructureDefinition-ViewDefinition.html)',
  example: {
    resourceType: 'ViewDefinition',
    name: 'patient_names',
    status: 'active',
    resource: 'Patient',
    select: [
      { column: [{ name: 'id', path: 'getResourceKey()' }] },
      { forEach: 'name', column: [{ name: 'family', path: 'family', type: 'string' }] },
    ],
  },
})

export const ViewDefinitionList = z
  .object({ views: z.array(ViewDefinitionBody), total: z.number().int() })
  .openapi('ViewDefinitionList')

export const ViewDefinitionListQuery = z.object({
  name: z.string().min(1).optional().openapi({ description: 'Only views of this `name`' }),
  resource: z.string().min(1).optional().openapi({ description: 'Only views of this resource type', example: 'Patient' }),
})

export const ViewDefinitionIdParam = z.object({
  id: z
    .string()
    .regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')
    .transform(Number)
    .openapi({ param: { name: 'id', in: 'path' }, type: 'string', example: '1' } as never),
})

/** A FHIR `Parameters` resource: the body of `$viewdefinition-run` (parameters checked by the service). */
export const RunParameters = z
  .object({
    resourceType: z.literal('Parameters'),
    parameter: z.array(z.record(z.string(), z.unknown())).optional(),
  })
  .openapi('ViewDefinitionRunParameters', {
    example: {
      resourceType: 'Parameters',
      parameter: [
        { name: 'viewReference', valueReference: { reference: 'ViewDefinition/1' } },
        { name: 'source', valueString: '12' },
        { name: '_format', valueCode: 'csv' },
      ],
    },
  })

export type RunParametersInput = z.infer<typeof RunParameters>

/** The stored view as answered: the definition with this row's `id` and `meta.lastUpdated`. */
export function toViewDefinitionDto(row: ViewDefinitionRow): Record<string, unknown> {
  const { meta, ...rest } = row.definition as { meta?: Record<string, unknown> }
  return { resourceType: 'ViewDefinition', ...rest, id: String(row.id), meta: { ...(meta ?? {}), lastUpdated: row.updatedAt } }
}
