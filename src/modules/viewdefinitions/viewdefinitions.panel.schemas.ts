import { z } from '@hono/zod-openapi'
import { TenantBody } from '../../http/router.ts'

/**
 * `PUT /api/panels/{panelId}/viewdefinition` (docs/sql-on-fhir.md, "Panels defined by a
 * ViewDefinition"): the view inline or by reference, and optionally the one source it reads. The
 * view itself is checked by the engine, so its messages name the place in the view.
 */
export const PanelViewDefinitionBody = z
  .object({
    viewResource: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: 'The ViewDefinition, inline (as `GET` answers it)' }),
    viewReference: z
      .object({ reference: z.string().min(1).openapi({ example: 'ViewDefinition/1' }) })
      .optional()
      .openapi({ description: 'A stored ViewDefinition of yours: `{ reference: "ViewDefinition/<id>" }`' }),
    dataSourceId: z
      .number()
      .int()
      .positive()
      .nullable()
      .optional()
      .openapi({
        description:
          'The one data source of the panel whose records the view expands; `null`: every source (records of the ' +
          "view's resource type). Absent: as before (every source for a panel not yet defined by a view).",
        example: 3,
      }),
    ...TenantBody,
  })
  .superRefine((body, ctx) => {
    if ((body.viewResource === undefined) === (body.viewReference === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['viewResource'],
        message: 'exactly one of viewResource and viewReference is required',
      })
    }
  })
  .openapi('PanelViewDefinitionPut', {
    example: {
      viewResource: {
        resourceType: 'ViewDefinition',
        resource: 'Patient',
        status: 'active',
        select: [
          { column: [{ name: 'id', path: 'getResourceKey()' }] },
          { forEach: 'name', column: [{ name: 'family', path: 'family', type: 'string' }] },
        ],
      },
    },
  })

export type PanelViewDefinitionInput = z.infer<typeof PanelViewDefinitionBody>
