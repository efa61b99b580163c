import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, json, TenantQuery } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import type { RowsPath } from './work.access.ts'
import {
  Comment,
  CommentBody,
  CommentPage,
  CommentsQuery,
  PanelCommentParams,
  ViewCommentParams,
} from './work.comments.schemas.ts'
import { createComment, deleteComment, listComments, updateComment } from './work.comments.ts'
import { PanelRowParams, ViewRowParams } from './work.schemas.ts'

/**
 * Comments on a row (docs/worklist.md "Comments"): list and write them, edit and delete one —
 * under the panel (`/panels/{panelId}/rows/{rowId}/comments`, owner and admins) and under a view
 * (`/views/{id}/rows/{rowId}/comments`, its readers while it allows comments).
 */

type Shape = 'panel' | 'view'
const tagsOf = (shape: Shape) => (shape === 'panel' ? ['Rows'] : ['Views'])
const prefix = (shape: Shape) =>
  shape === 'panel' ? '/panels/{panelId}/rows/{rowId}/comments' : '/views/{id}/rows/{rowId}/comments'
const rowParams = (shape: Shape) => (shape === 'panel' ? PanelRowParams : ViewRowParams)
const commentParams = (shape: Shape) => (shape === 'panel' ? PanelCommentParams : ViewCommentParams)
const body = <T>(schema: T) => ({ required: true, content: { 'application/json': { schema } } })

const gates =
  'Panel `metadata.settings.enableComments: false` turns comments off (403 `COMMENTS_DISABLED`); on a view’s path, readers other than the panel’s owner and tenant admins also need the view’s `publishConfig.allowComments: true` (else 403 `COMMENTS_DISABLED`).'
const who = (shape: Shape) =>
  shape === 'panel' ? 'The panel’s owner or a tenant admin.' : 'Readers of the view (`read`), by its sharing.'

const listRoute = (shape: Shape) =>
  createRoute({
    method: 'get',
    path: prefix(shape),
    tags: tagsOf(shape),
    summary: 'A row’s comments, oldest first (the newest last), paged',
    description: `${who(shape)} \`page\` 1-based, \`limit\` 1–100 (default 50). A row of another panel, view or tenant is a 404. ${gates} Recorded in the read audit.`,
    security: bearer,
    middleware: auditAccess('read', shape),
    request: { params: rowParams(shape), query: CommentsQuery },
    responses: { 200: json(CommentPage, 'One page of comments'), ...errorResponses },
  })

const createCommentRoute = (shape: Shape) =>
  createRoute({
    method: 'post',
    path: prefix(shape),
    tags: tagsOf(shape),
    summary: 'Comments on a row',
    description: `${who(shape)} \`text\`: 1–10,000 characters, not only whitespace, stored as given. Appends \`row.commented\`; views that show or filter on \`_commentCount\` move; the work state’s \`version\` does not change. Each \`@<userId>\` notifies that user once (\`type: "mention"\`) when they can read the row (docs/worklist.md "Mentions"). ${gates}`,
    security: bearer,
    request: { params: rowParams(shape), query: TenantQuery, body: body(CommentBody) },
    responses: { 201: json(Comment, 'The new comment'), ...errorResponses },
  })

const updateRoute = (shape: Shape) =>
  createRoute({
    method: 'patch',
    path: `${prefix(shape)}/{commentId}`,
    tags: tagsOf(shape),
    summary: 'Edits a comment (its author only)',
    description: `Anyone but the author gets 403. A comment of another row, panel or tenant is a 404. Users newly mentioned are notified; nobody is notified twice for one comment. ${gates}`,
    security: bearer,
    request: { params: commentParams(shape), query: TenantQuery, body: body(CommentBody) },
    responses: { 200: json(Comment, 'The edited comment'), ...errorResponses },
  })

const deleteRoute = (shape: Shape) =>
  createRoute({
    method: 'delete',
    path: `${prefix(shape)}/{commentId}`,
    tags: tagsOf(shape),
    summary: 'Deletes a comment (its author or a manager)',
    description: `A manager is the panel’s owner, a tenant admin or a reader with the view’s \`manage\` permission; anyone else but the author gets 403. A comment of another row, panel or tenant is a 404. ${gates}`,
    security: bearer,
    request: { params: commentParams(shape), query: TenantQuery },
    responses: { 204: { description: 'Deleted' }, ...errorResponses },
  })

/** The rows of the path: a panel's or a view's. */
const pathOf = (params: { panelId: number } | { id: number }): RowsPath =>
  'panelId' in params ? { panelId: params.panelId } : { viewId: params.id }

function register(router: ReturnType<typeof createRouter>, shape: Shape) {
  return router
    .openapi(listRoute(shape), async (c) => {
      const params = c.req.valid('param')
      const query = c.req.valid('query')
      return sendJson(c, await listComments(ctxOf(c, query), pathOf(params), params.rowId, query, c.req.url), 200)
    })
    .openapi(createCommentRoute(shape), async (c) => {
      const params = c.req.valid('param')
      const input = c.req.valid('json')
      const ctx = ctxOf(c, c.req.valid('query'), input)
      return sendJson(c, await createComment(ctx, pathOf(params), params.rowId, input.text), 201)
    })
    .openapi(updateRoute(shape), async (c) => {
      const params = c.req.valid('param')
      const input = c.req.valid('json')
      const ctx = ctxOf(c, c.req.valid('query'), input)
      return sendJson(c, await updateComment(ctx, pathOf(params), params.rowId, params.commentId, input.text), 200)
    })
    .openapi(deleteRoute(shape), async (c) => {
      const params = c.req.valid('param')
      await deleteComment(ctxOf(c, c.req.valid('query')), pathOf(params), params.rowId, params.commentId)
      return c.body(null, 204)
    })
}

export const commentsRouter = register(register(createRouter(), 'panel'), 'view')
