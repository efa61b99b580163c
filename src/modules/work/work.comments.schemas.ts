import { z } from '@hono/zod-openapi'
import { positiveId, TenantBody, TenantQuery, Timestamp } from '../../http/router.ts'
import { PanelRowParams, ViewRowParams } from './work.schemas.ts'

/** Request and answer shapes of the comments on a row (docs/worklist.md "Comments"). */

/** The longest comment, in characters (Unicode code points). */
export const MAX_COMMENT_CHARS = 10_000

/** Comments per page when `limit` is not given. */
export const DEFAULT_COMMENTS_LIMIT = 50

/**
 * A comment's text: 1 to 10,000 characters (code points, so an emoji is one), not only
 * whitespace, stored exactly as given (no trimming, no HTML rendering).
 */
const CommentText = z
  .string()
  .refine((s) => s.trim().length > 0, 'must not be empty or only whitespace')
  .refine((s) => [...s].length <= MAX_COMMENT_CHARS, `must be at most ${MAX_COMMENT_CHARS.toLocaleString('en')} characters`)
  .openapi({
    description: '1–10,000 characters, stored as given. `@<userId>` mentions notify that user (docs/worklist.md).',
    example: 'Called, no answer. @user-456 can you try tomorrow?',
  })

export const CommentBody = z
  .object({ ...TenantBody, text: CommentText })
  .strict()
  .openapi('CommentRequest')

export type CommentInput = z.infer<typeof CommentBody>

export const PanelCommentParams = PanelRowParams.extend({ commentId: positiveId('commentId') })
export const ViewCommentParams = ViewRowParams.extend({ commentId: positiveId('commentId') })

export const CommentsQuery = TenantQuery.extend({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1).openapi({ example: 1 }),
  limit: z.coerce.number().int().min(1).max(100).default(DEFAULT_COMMENTS_LIMIT).openapi({ example: 50 }),
})

export type CommentsQueryInput = z.infer<typeof CommentsQuery>

export const Comment = z
  .object({
    id: z.number().int().openapi({ example: 12 }),
    rowId: z.number().int().openapi({ description: 'The row’s `_id`', example: 17 }),
    panelId: z.number().int().openapi({ example: 1 }),
    authorId: z.string().openapi({ example: 'user-123' }),
    text: z.string().openapi({ example: 'Called, no answer. @user-456 can you try tomorrow?' }),
    createdAt: Timestamp,
    updatedAt: Timestamp.openapi({ description: 'Differs from `createdAt` once the author edited it' }),
  })
  .openapi('Comment')

export type CommentDto = z.infer<typeof Comment>

const Link = z.string().nullable()

export const CommentPage = z
  .object({
    data: z.array(Comment).openapi({ description: 'Oldest first: the newest comment is last' }),
    meta: z.object({
      total: z.number().int(),
      page: z.number().int(),
      limit: z.number().int(),
      pages: z.number().int(),
      hasNext: z.boolean(),
      hasPrev: z.boolean(),
    }),
    links: z.object({ first: z.string(), prev: Link, next: Link, last: z.string() }),
  })
  .openapi('CommentPage')

export type CommentPageDto = z.infer<typeof CommentPage>
