import { z } from '@hono/zod-openapi'

/**
 * The paging query of the lists that page by offset (changes, the read audit, webhook
 * deliveries): `limit` (1–100, default 50) with either `offset` or a 1-based `page`.
 */
export const OffsetPaging = {
  limit: z.coerce.number().int().min(1).max(100).optional().default(50).openapi({ example: 50 }),
  offset: z.coerce.number().int().min(0).optional().openapi({ description: 'Items to skip; or use `page`' }),
  page: z.coerce.number().int().min(1).optional().openapi({ description: '1-based page of `limit` items; or use `offset`' }),
}

/** The refinement of a query with OffsetPaging: `offset` and `page` are two ways to say one thing. */
export function refuseOffsetWithPage(q: { offset?: number; page?: number }, ctx: z.RefinementCtx) {
  if (q.offset !== undefined && q.page !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['page'], message: 'use either offset or page, not both' })
  }
}
