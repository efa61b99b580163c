import { z } from '@hono/zod-openapi'
import { QueryBoolean, TenantQuery } from '../../http/router.ts'
import { EXPORT_FORMATS } from './rows.export.types.ts'

/** Rows one export may hold unless `maxRows` asks for fewer. */
export const EXPORT_MAX_ROWS = 1_000_000

const Instant = z
  .string()
  .min(1)
  .max(40)
  .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO 8601 date or date-time')

export const DateRangeSchema = z
  .object({
    start: Instant.optional(),
    end: Instant.optional(),
    column: z.string().min(1).max(100).optional(),
  })
  .refine((r) => r.start !== undefined || r.end !== undefined, 'needs start, end or both')

/** A `dateRange={"start":…}` query value: JSON text of the range. */
const DateRangeJson = z
  .string()
  .max(500)
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON: {"start","end","column"}' })
      return z.NEVER
    }
  })
  .pipe(DateRangeSchema)

/**
 * ExportConfig (spec §2.9) as query parameters: `format`, `includeData`, `includeFormulas`,
 * `maxRows`, `compression`, and `dateRange` as `dateRange[start]`/`dateRange[end]`/`dateRange[column]`
 * or as JSON in `dateRange`.
 */
export const ExportQuery = TenantQuery.extend({
  format: z.enum(EXPORT_FORMATS).default('csv').openapi({ example: 'csv' }),
  includeData: QueryBoolean.optional().openapi({ description: 'false: the header only', example: 'true' }),
  includeFormulas: QueryBoolean.optional().openapi({ example: 'false' }),
  maxRows: z.coerce.number().int().min(1).max(EXPORT_MAX_ROWS).optional().openapi({ example: 1000 }),
  compression: z.enum(['gzip', 'none']).optional().openapi({ example: 'gzip' }),
  dateRange: DateRangeJson.optional().openapi({
    type: 'string',
    example: '{"start":"2026-01-01","end":"2026-03-31","column":"Admitted"}',
  }),
  'dateRange[start]': Instant.optional().openapi({ example: '2026-01-01' }),
  'dateRange[end]': Instant.optional().openapi({ example: '2026-03-31' }),
  'dateRange[column]': z.string().min(1).max(100).optional().openapi({ example: 'Admitted' }),
})

export type ExportQueryInput = z.infer<typeof ExportQuery>
export type DateRange = z.infer<typeof DateRangeSchema>

/** The date range of a query, from either form (the bracket form wins field by field). */
export function dateRangeOf(q: ExportQueryInput): DateRange | undefined {
  const start = q['dateRange[start]'] ?? q.dateRange?.start
  const end = q['dateRange[end]'] ?? q.dateRange?.end
  const column = q['dateRange[column]'] ?? q.dateRange?.column
  if (start === undefined && end === undefined) return column === undefined ? undefined : { column }
  return { start, end, column }
}
