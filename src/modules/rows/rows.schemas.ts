import { z } from '@hono/zod-openapi'
import { TenantQuery } from '../../http/router.ts'
import { FilterList } from '../views/views.criteria.schemas.ts'

/** Rows per page when `limit` is not given. */
export const DEFAULT_ROWS_LIMIT = 50

/** `filters` arrives as JSON text in the query; it must be a FilterCriteria list (spec §2.7). */
const FiltersParam = z
  .string()
  .max(20_000)
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of filter criteria' })
      return z.NEVER
    }
  })
  .pipe(FilterList)
  .openapi({
    type: 'string',
    description: 'A JSON array of FilterCriteria, ANDed with the view’s own filters',
    example: '[{"columnTitle":"Age","operator":"greaterThan","value":65}]',
  })

const NameList = z
  .string()
  .max(5000)
  .transform((s) =>
    s
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  )

/** ListParams (spec §2.10) of the row endpoints. */
export const RowsQuery = TenantQuery.extend({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1).openapi({ example: 1 }),
  limit: z.coerce.number().int().min(1).max(100).default(DEFAULT_ROWS_LIMIT).openapi({ example: 50 }),
  sort: z.string().trim().min(1).max(255).optional().openapi({ description: 'A column name', example: 'Age' }),
  order: z.enum(['asc', 'desc']).optional().openapi({ example: 'desc' }),
  search: z.string().max(255).optional().openapi({ description: 'Case-insensitive substring', example: 'smith' }),
  searchFields: NameList.optional().openapi({
    type: 'string',
    description: 'Comma-separated column names searched (default: every text column)',
    example: 'Family,Given',
  }),
  filters: FiltersParam.optional(),
  assignee: z.string().min(1).max(255).optional().openapi({
    description:
      'Only rows assigned to this user: `me` (or `@me`) for the caller — shorthand for the filter `_assignee equals @me` — or a user id (compared exactly). ANDed with `filters`; an expired claim assigns nobody.',
    example: 'me',
  }),
})

export type RowsQueryInput = z.infer<typeof RowsQuery>

const Row = z
  .object({
    _id: z.number().int().openapi({
      description: "The row's lasting id: the same for as long as its identity (source, key) is in the panel",
      example: 17,
    }),
    _key: z
      .string()
      .openapi({ description: 'The record key (with its position path in a ViewDefinition panel)', example: 'Patient/17' }),
    _source: z.number().int().openapi({ description: 'The data source id', example: 2 }),
    _errors: z
      .array(z.object({ column: z.string(), code: z.string(), message: z.string() }))
      .optional()
      .openapi({ description: 'Why cells of this row are blank or invalid' }),
  })
  .catchall(z.unknown())
  .openapi('Row', { example: { _id: 17, _key: 'Patient/17', _source: 2, Name: 'Ada Lovelace', Age: 36 } })

const Link = z.string().nullable()

export const RowsResponse = z
  .object({
    data: z.array(Row),
    meta: z.object({
      total: z.number().int(),
      page: z.number().int(),
      limit: z.number().int(),
      pages: z.number().int(),
      hasNext: z.boolean(),
      hasPrev: z.boolean(),
    }),
    links: z.object({ first: z.string(), prev: Link, next: Link, last: z.string() }),
    groups: z
      .array(
        z.object({
          key: z.record(z.string(), z.unknown()),
          count: z.number().int(),
          aggregations: z.record(z.string(), z.unknown()),
        }),
      )
      .optional(),
    aggregations: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi('RowsResponse')

export type RowsResponseDto = z.infer<typeof RowsResponse>
