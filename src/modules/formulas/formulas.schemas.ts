import { z } from '@hono/zod-openapi'
import { TenantBody, TenantQuery } from '../../http/router.ts'

const CategoryEnum = z.enum(['text', 'math', 'date', 'logical', 'lookup', 'statistical', 'conversion'])
const PanelId = z.number().int().positive().openapi({ example: 1 })
const Formula = z.string().min(1).max(10_000).openapi({ example: 'ROUND({Weight} / POWER({Height} / 100, 2), 1)' })
const AnyValue = z.any().openapi({ example: 42 })

export const FunctionsQuery = z.object({ category: CategoryEnum.optional(), ...TenantQuery.shape })

export const FormulaFunction = z
  .object({
    name: z.string().openapi({ example: 'ROUND' }),
    category: CategoryEnum,
    description: z.string(),
    syntax: z.string().openapi({ example: 'ROUND(number, digits)' }),
    parameters: z.array(z.object({ name: z.string(), type: z.string(), required: z.boolean(), description: z.string() })),
    returnType: z.string().openapi({ example: 'number' }),
    examples: z.array(z.object({ expression: z.string(), description: z.string(), result: AnyValue })),
  })
  .openapi('FormulaFunction')

export const ExpressionError = z
  .object({
    type: z.enum(['syntax', 'reference', 'type', 'circular']),
    message: z.string().openapi({ example: 'Unknown column {Agee}' }),
    position: z.number().int().optional().openapi({ example: 0 }),
    suggestion: z.string().optional().openapi({ example: 'did you mean {Age}?' }),
  })
  .openapi('ExpressionError')

export const ValidateBody = z
  .object({
    panelId: PanelId,
    formula: Formula,
    type: z.string().min(1).max(50).optional(),
    /** The name the column has or will have: references back to it are circular. */
    name: z.string().min(1).max(100).optional(),
    dependencies: z.array(z.string().min(1).max(1000)).max(500).optional(),
    ...TenantBody,
  })
  .openapi('ValidateFormula')

export const ValidateResult = z
  .object({
    valid: z.boolean(),
    errors: z.array(ExpressionError),
    dependencies: z.array(z.string()).openapi({ example: ['Weight', 'Height'] }),
    returnType: z.string().openapi({ example: 'number' }),
  })
  .openapi('FormulaValidation')

export const ContextQuery = z.object({
  panelId: z.coerce.number().int().positive().openapi({ example: 1 }),
  ...TenantQuery.shape,
})

export const ExpressionContext = z
  .object({
    availableColumns: z.array(z.object({ name: z.string(), type: z.string(), columnType: z.string() })),
    functions: z.array(FormulaFunction),
    constants: z.array(z.object({ name: z.string(), type: z.string(), value: AnyValue, description: z.string() })),
  })
  .openapi('ExpressionContext')

export const PreviewBody = z
  .object({
    formula: Formula,
    panelId: PanelId.optional(),
    limit: z.number().int().min(1).max(20).default(5),
    values: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ example: { Weight: 70, Height: 175 } }),
    record: z.record(z.string(), z.unknown()).optional(),
    ...TenantBody,
  })
  .superRefine((b, ctx) => {
    if (b.panelId === undefined && b.values === undefined) {
      ctx.addIssue({ code: 'custom', path: ['panelId'], message: 'panelId or values is required' })
    }
  })
  .openapi('PreviewFormula')

const CellError = z.object({ code: z.string(), message: z.string() })

export const PreviewResult = z
  .object({
    returnType: z.string(),
    value: AnyValue.optional(),
    error: CellError.optional(),
    values: z.array(z.object({ _id: z.number().int(), value: AnyValue, error: CellError.optional() })).optional(),
    errors: z.array(ExpressionError).optional(),
  })
  .openapi('FormulaPreview')

export type ValidateInput = z.infer<typeof ValidateBody>
export type PreviewInput = z.infer<typeof PreviewBody>
