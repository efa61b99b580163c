import { z } from '@hono/zod-openapi'
import type { columns } from '../../db/schema.ts'
import { CELL_KINDS, type CellKind, KNOWN_TYPES } from '../../engine/cells/coerce.ts'
import { JsonObject, QueryBoolean, TenantBody, TenantQuery, Timestamp } from '../../http/router.ts'

const compiles = (pattern: string) => {
  try {
    new RegExp(pattern)
    return true
  } catch {
    return false
  }
}

/**
 * Column properties: free-form, except the reference-shape fields (spec §2.6, §8) that are checked
 * when present: display width 50–1000 px, alignment, validation lengths and a compilable pattern.
 */
export const ColumnProperties = z
  .object({
    displaySettings: z
      .object({
        width: z.number().min(50).max(1000).optional(),
        alignment: z.enum(['left', 'center', 'right']).optional(),
      })
      .passthrough()
      .optional(),
    validation: z
      .object({
        minLength: z.number().int().min(0).optional(),
        maxLength: z.number().int().min(1).optional(),
        pattern: z.string().refine(compiles, 'must be a valid regular expression').optional(),
      })
      .passthrough()
      .optional(),
  })
  .passthrough()
  .openapi('ColumnProperties', { example: { displaySettings: { width: 120, alignment: 'right' } } })

const ColumnName = z.string().trim().min(1).max(100).openapi({ example: 'Age' })
/** The known type names with the kind each is read as, from the one mapping (engine/cells/coerce.ts). */
export const TYPE_DESCRIPTION =
  'Any non-empty name (the web client and upstream backends send names of their own). The known names, ' +
  'and the kind the service reads each as: ' +
  Object.entries(KNOWN_TYPES)
    .map(([type, kind]) => `${type} → ${kind}`)
    .join(', ') +
  '. Names are matched case-insensitively; any other name reads as text, and the column answer says so in `kind`.'

const ColumnType = z.string().trim().min(1).max(50).openapi({ example: 'number', description: TYPE_DESCRIPTION })
const SourcePath = z.string().trim().min(1).max(1000)
const Formula = z.string().min(1).max(10000).openapi({ example: 'DATEDIF({Birth Date}, TODAY(), "Y")' })
const Dependencies = z
  .array(z.string().min(1).max(1000))
  .max(500)
  .openapi({ example: ['Birth Date'] })
const DataSourceId = z.number().int().positive().openapi({ example: 1 })

export const CreateBaseColumnBody = z
  .object({
    name: ColumnName,
    fhirPath: SourcePath.optional().openapi({ example: 'Patient.birthDate' }),
    sourceField: SourcePath.optional().openapi({ example: 'birthDate' }),
    type: ColumnType.default('text'),
    properties: ColumnProperties.default({}),
    metadata: JsonObject.default({}),
    dataSourceId: DataSourceId.optional(),
    ...TenantBody,
  })
  .superRefine((body, ctx) => {
    if (body.fhirPath === undefined && body.sourceField === undefined) {
      ctx.addIssue({ code: 'custom', path: ['fhirPath'], message: 'fhirPath or sourceField is required' })
    }
  })
  .openapi('CreateBaseColumn', {
    example: { name: 'Birth Date', fhirPath: 'Patient.birthDate', type: 'date', tenantId: 'tenant-123', userId: 'user-456' },
  })

export const CreateCalculatedColumnBody = z
  .object({
    name: ColumnName,
    formula: Formula,
    type: ColumnType.default('text'),
    dependencies: Dependencies.optional(),
    properties: ColumnProperties.default({}),
    metadata: JsonObject.default({}),
    ...TenantBody,
  })
  .openapi('CreateCalculatedColumn', {
    example: {
      name: 'Age',
      formula: 'DATEDIF({Birth Date}, TODAY(), "Y")',
      type: 'number',
      tenantId: 'tenant-123',
      userId: 'user-456',
    },
  })

/**
 * Either kind. Base-only fields are nullable so a calculated item sent back as read (its
 * `sourceField: null`…) is accepted; a non-null value for the other kind is a 400.
 */
export const UpdateColumnBody = z
  .object({
    name: ColumnName.optional(),
    type: ColumnType.optional(),
    properties: ColumnProperties.optional(),
    metadata: JsonObject.optional(),
    fhirPath: SourcePath.nullable().optional(),
    sourceField: SourcePath.nullable().optional(),
    dataSourceId: DataSourceId.nullable().optional(),
    formula: Formula.optional(),
    dependencies: Dependencies.optional(),
    ...TenantBody,
  })
  .openapi('UpdateColumn', { example: { name: 'Age (years)', tenantId: 'tenant-123', userId: 'user-456' } })

export const UpdateColumnQuery = TenantQuery.extend({
  cascade: QueryBoolean.optional().openapi({
    description: 'On rename, rewrite `{Old}` → `{New}` in the formulas of dependent calculated columns',
    example: 'true',
  }),
})

export const DeleteColumnBody = z.object({ ...TenantBody }).openapi('DeleteColumn')

export const Column = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    panelId: z.number().int().openapi({ example: 1 }),
    columnType: z.enum(['base', 'calculated']),
    name: z.string().openapi({ example: 'Age' }),
    type: z.string().openapi({ example: 'number', description: TYPE_DESCRIPTION }),
    kind: z.enum(CELL_KINDS).openapi({
      example: 'number',
      description:
        'What the service reads the cells as: the kind of `type` (a misspelt type reads as text); a calculated column ' +
        'left at the default text type takes the kind its formula returns (docs/views-and-rows.md "Kinds of cells")',
    }),
    sourceField: z.string().nullable(),
    fhirPath: z.string().nullable(),
    dataSourceId: z.number().int().nullable(),
    formula: z.string().optional().openapi({ description: 'Calculated columns only' }),
    dependencies: z.array(z.string()).optional().openapi({ description: 'Calculated columns only' }),
    properties: JsonObject,
    metadata: JsonObject,
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    userId: z.string().openapi({ example: 'user-456' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('Column')

export const ColumnList = z.object({ baseColumns: z.array(Column), calculatedColumns: z.array(Column) }).openapi('ColumnList')

export type CreateBaseColumnInput = z.infer<typeof CreateBaseColumnBody>
export type CreateCalculatedColumnInput = z.infer<typeof CreateCalculatedColumnBody>
export type UpdateColumnInput = z.infer<typeof UpdateColumnBody>
export type ColumnRow = typeof columns.$inferSelect
export type ColumnDto = z.infer<typeof Column>

/** A column as answered; `kind` is how the service reads its cells (columnKind, rowstore/query/columns.ts). */
export const toColumnDto = (row: ColumnRow, kind: CellKind): ColumnDto => ({
  id: row.id,
  panelId: row.panelId,
  columnType: row.columnType,
  name: row.name,
  type: row.type,
  kind,
  sourceField: row.sourceField ?? null,
  fhirPath: row.fhirPath ?? null,
  dataSourceId: row.dataSourceId ?? null,
  ...(row.columnType === 'calculated' ? { formula: row.formula ?? '', dependencies: row.dependencies ?? [] } : {}),
  properties: row.properties ?? {},
  metadata: row.metadata ?? {},
  tenantId: row.tenantId,
  userId: row.userId,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
})
