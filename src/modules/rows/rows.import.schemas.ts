import { z } from '@hono/zod-openapi'
import { TenantBody } from '../../http/router.ts'

/** Import formats (spec §2.9 ImportConfig.format). */
export const IMPORT_FORMATS = ['csv', 'excel', 'json'] as const
export type ImportFormat = (typeof IMPORT_FORMATS)[number]

/** Records per INSERT statement of an import unless `options.batchSize` says otherwise. */
export const DEFAULT_IMPORT_BATCH = 1000
export const MAX_IMPORT_BATCH = 5000
/** Mappings one import may carry. */
export const MAX_MAPPINGS = 500

const Name = z.string().trim().min(1).max(100)

export const FieldMappingSchema = z
  .object({
    sourceField: z.string().min(1).max(255).openapi({ example: 'Date of birth' }),
    targetColumn: Name.openapi({ example: 'Birth date' }),
    transformation: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .openapi({ description: 'A formula over `{value}` (the source value)', example: 'TRIM({value})' }),
  })
  .openapi('FieldMapping')

export const ImportConfigSchema = z
  .object({
    format: z.enum(IMPORT_FORMATS).openapi({ example: 'csv' }),
    mapping: z.array(FieldMappingSchema).min(1).max(MAX_MAPPINGS),
    options: z
      .object({
        hasHeaders: z.boolean().optional(),
        skipRows: z.number().int().min(0).max(1_000_000).optional(),
        createColumns: z.boolean().optional(),
        updateExisting: z.boolean().optional(),
        batchSize: z.number().int().min(1).max(MAX_IMPORT_BATCH).optional(),
      })
      .optional()
      .default({}),
    validation: z
      .object({
        allowedFormats: z.array(z.enum(IMPORT_FORMATS)).min(1).optional(),
        maxFileSize: z.number().int().positive().optional(),
        requiredFields: z.array(Name).max(MAX_MAPPINGS).optional(),
        uniqueFields: z.array(Name).max(MAX_MAPPINGS).optional(),
      })
      .optional()
      .default({}),
  })
  .openapi('ImportConfig', {
    example: {
      format: 'csv',
      mapping: [
        { sourceField: 'MRN', targetColumn: 'MRN' },
        { sourceField: 'Name', targetColumn: 'Name', transformation: 'PROPER(TRIM({value}))' },
      ],
      options: { hasHeaders: true, createColumns: true, updateExisting: true },
      validation: { requiredFields: ['MRN'], uniqueFields: ['MRN'] },
    },
  })

export type ImportConfig = z.infer<typeof ImportConfigSchema>

/** The JSON body form: the config and the rows themselves. */
export const ImportJsonBody = z
  .object({
    config: ImportConfigSchema,
    rows: z.array(z.record(z.string(), z.unknown())),
    ...TenantBody,
  })
  .openapi('ImportRows')

export const ImportRowError = z
  .object({
    row: z.number().int().openapi({ description: '1-based data row (header excluded)', example: 3 }),
    field: z.string().nullable().openapi({ example: 'MRN' }),
    message: z.string().openapi({ example: 'MRN is required' }),
  })
  .openapi('ImportRowError')

export const ImportReport = z
  .object({
    rowsRead: z.number().int().openapi({ example: 120 }),
    rowsImported: z.number().int().openapi({ example: 110 }),
    rowsUpdated: z.number().int().openapi({ example: 7 }),
    rowsRejected: z.number().int().openapi({ example: 3 }),
    errors: z.array(ImportRowError),
    dataSourceId: z.number().int().openapi({ description: 'The panel’s import data source', example: 4 }),
    columnsCreated: z.array(z.string()).openapi({ example: ['MRN'] }),
  })
  .openapi('ImportReport')

export type ImportReportDto = z.infer<typeof ImportReport>
export type ImportRowErrorDto = z.infer<typeof ImportRowError>
