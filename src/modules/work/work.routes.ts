import { createRoute, z } from '@hono/zod-openapi'
import { invalid } from '../../errors.ts'
import { ctxOf } from '../../http/auth.ts'
import type { AppContext } from '../../http/context.ts'
import { sendJson } from '../../http/response-headers.ts'
import {
  bearer,
  conflictResponse,
  createRouter,
  ErrorBody,
  errorResponses,
  json,
  PanelIdParam,
  TenantQuery,
} from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import type { RowsPath } from './work.access.ts'
import { LeaseBody, PanelRowParams, ViewRowParams, WorkedRow, Workflow, WorkflowBody, WorkPatchBody } from './work.schemas.ts'
import { claimRow, getRow, nextRow, patchWork, releaseRow, type WorkedRow as Worked } from './work.service.ts'
import { getWorkflow, putWorkflow } from './work.workflow.ts'

/**
 * Working the list (docs/worklist.md): one row with its work state, its change, claim and
 * release — each under the panel (`/panels/{panelId}/rows/{rowId}`, owner and admins) and under a
 * view (`/views/{id}/rows/{rowId}`, by the view's sharing) — `next` of a view, and the panel's workflow.
 */

const body = <T>(schema: T, required = true) => ({ required, content: { 'application/json': { schema } } })
const etag = { ETag: { description: 'The work state’s version, `"<version>"`', schema: { type: 'string' as const } } }
const rowAnswer = (description: string) => ({ ...json(WorkedRow, description), headers: etag })

const IfMatch = z.object({
  'if-match': z.string().max(100).optional().openapi({
    description: 'Only while the work state is at this version: `"<version>"` (a stale one is a 412)',
    example: '"3"',
  }),
})

type Shape = 'panel' | 'view'
const tagsOf = (shape: Shape) => (shape === 'panel' ? ['Rows'] : ['Views'])
const prefix = (shape: Shape) => (shape === 'panel' ? '/panels/{panelId}/rows/{rowId}' : '/views/{id}/rows/{rowId}')
const paramsOf = (shape: Shape) => (shape === 'panel' ? PanelRowParams : ViewRowParams)
const who = (shape: Shape) => (shape === 'panel' ? 'the panel’s owner or an admin' : 'readers of the view, by its sharing')

const getRowRoute = (shape: Shape) =>
  createRoute({
    method: 'get',
    path: prefix(shape),
    tags: tagsOf(shape),
    summary: `One row with its work state (${who(shape)})`,
    description:
      'The row as the path shows it, with `_work`; a row of another panel, view or tenant is a 404. Recorded in the read audit.',
    security: bearer,
    middleware: auditAccess('read', shape),
    request: { params: paramsOf(shape), query: TenantQuery },
    responses: { 200: rowAnswer('The row'), ...errorResponses },
  })

const patchRoute = (shape: Shape) =>
  createRoute({
    method: 'patch',
    path: `${prefix(shape)}/work`,
    tags: tagsOf(shape),
    summary: 'Changes a row’s status, assignee, due date or snooze',
    description:
      'Needs `edit`; assigning someone else needs `manage`. With `If-Match: "<version>"` only while the state is at that version: a stale one is a 412 `PRECONDITION_FAILED` with the current state in `details`. Answers the row: recorded in the read audit.',
    security: bearer,
    middleware: auditAccess('read', shape),
    request: { params: paramsOf(shape), query: TenantQuery, headers: IfMatch, body: body(WorkPatchBody) },
    responses: {
      200: rowAnswer('The row with its new work state'),
      412: json(
        ErrorBody,
        '`PRECONDITION_FAILED`: the work state is no longer at the If-Match version (`details`: the current state)',
      ),
      ...errorResponses,
    },
  })

const claimRoute = (shape: Shape) =>
  createRoute({
    method: 'post',
    path: `${prefix(shape)}/claim`,
    tags: tagsOf(shape),
    summary: 'Claims a row for the caller (renews the caller’s own claim)',
    description:
      'One conditional write: the row is taken only where nobody else holds it unexpired; else 409 `CONFLICT` with `details.assignee`. Needs `edit`. Recorded in the read audit.',
    security: bearer,
    middleware: auditAccess('read', shape),
    request: { params: paramsOf(shape), query: TenantQuery, body: body(LeaseBody, false) },
    responses: { 200: rowAnswer('The claimed row'), ...conflictResponse, ...errorResponses },
  })

const releaseRoute = (shape: Shape) =>
  createRoute({
    method: 'post',
    path: `${prefix(shape)}/release`,
    tags: tagsOf(shape),
    summary: 'Releases a claim (the holder, or a manager)',
    description:
      'Needs `edit`; releasing someone else’s claim needs `manage` (403). Answers the row: recorded in the read audit.',
    security: bearer,
    middleware: auditAccess('read', shape),
    request: {
      params: paramsOf(shape),
      query: TenantQuery,
      body: body(z.object({ tenantId: z.string().optional(), userId: z.string().optional() }).strict(), false),
    },
    responses: { 200: rowAnswer('The released row'), ...errorResponses },
  })

const nextRoute = createRoute({
  method: 'post',
  path: '/views/{id}/next',
  tags: ['Views'],
  summary: 'Claims the next row of a view: the first in its order nobody holds, not done, not snoozed',
  description: 'Concurrent callers never get the same row. 204 when no row is left. Needs `edit`. Recorded in the read audit.',
  security: bearer,
  middleware: auditAccess('read', 'view'),
  request: { params: z.object({ id: ViewRowParams.shape.id }), query: TenantQuery, body: body(LeaseBody, false) },
  responses: { 200: rowAnswer('The claimed row'), 204: { description: 'No row is left to work' }, ...errorResponses },
})

const getWorkflowRoute = createRoute({
  method: 'get',
  path: '/panels/{panelId}/workflow',
  tags: ['Panels'],
  summary: 'The panel’s workflow: statuses, SLA, claim lease, patient column',
  security: bearer,
  request: { params: PanelIdParam, query: TenantQuery },
  responses: { 200: json(Workflow, 'The workflow'), ...errorResponses },
})

const putWorkflowRoute = createRoute({
  method: 'put',
  path: '/panels/{panelId}/workflow',
  tags: ['Panels'],
  summary: 'Replaces the panel’s workflow',
  description: 'Statuses are unique and include `open`. A status still held by rows cannot be removed (409 naming how many).',
  security: bearer,
  request: { params: PanelIdParam, body: body(WorkflowBody) },
  responses: { 200: json(Workflow, 'The stored workflow'), ...conflictResponse, ...errorResponses },
})

/** The rows of the path: a panel's or a view's. */
const pathOf = (params: { panelId: number } | { id: number }): RowsPath =>
  'panelId' in params ? { panelId: params.panelId } : { viewId: params.id }

/** `"<version>"` (or `W/"<version>"`) → the version; `*` or none → no condition; anything else is a 400. */
function versionOf(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '*') return undefined
  const m = /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(header)
  if (!m) throw invalid([{ path: 'If-Match', message: 'must be "<version>" as the ETag gave it' }], 'Malformed If-Match')
  return Number(m[1])
}

function answer(c: AppContext, result: Worked) {
  ;(c.get('responseHeaders') as Record<string, string>).etag = result.etag
  return sendJson(c, result.row, 200)
}

function register(router: ReturnType<typeof createRouter>, shape: Shape) {
  return router
    .openapi(getRowRoute(shape), async (c) => {
      const params = c.req.valid('param')
      return answer(c, await getRow(ctxOf(c, c.req.valid('query')), pathOf(params), params.rowId))
    })
    .openapi(patchRoute(shape), async (c) => {
      const params = c.req.valid('param')
      const input = c.req.valid('json')
      const ifMatch = versionOf(c.req.valid('header')['if-match'])
      return answer(c, await patchWork(ctxOf(c, c.req.valid('query'), input), pathOf(params), params.rowId, input, ifMatch))
    })
    .openapi(claimRoute(shape), async (c) => {
      const params = c.req.valid('param')
      const input = c.req.valid('json') ?? {}
      return answer(c, await claimRow(ctxOf(c, c.req.valid('query'), input), pathOf(params), params.rowId, input.leaseSeconds))
    })
    .openapi(releaseRoute(shape), async (c) => {
      const params = c.req.valid('param')
      return answer(c, await releaseRow(ctxOf(c, c.req.valid('query'), c.req.valid('json') ?? {}), pathOf(params), params.rowId))
    })
}

export const workRouter = register(register(createRouter(), 'panel'), 'view')
  .openapi(nextRoute, async (c) => {
    const input = c.req.valid('json') ?? {}
    const result = await nextRow(ctxOf(c, c.req.valid('query'), input), c.req.valid('param').id, input.leaseSeconds)
    if (!result) return c.body(null, 204)
    return answer(c, result)
  })
  .openapi(getWorkflowRoute, async (c) =>
    sendJson(c, await getWorkflow(ctxOf(c, c.req.valid('query')), c.req.valid('param').panelId), 200),
  )
  .openapi(putWorkflowRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await putWorkflow(ctxOf(c, input), c.req.valid('param').panelId, input), 200)
  })
