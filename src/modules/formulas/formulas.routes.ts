import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, json } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import {
  ContextQuery,
  ExpressionContext,
  FormulaFunction,
  FunctionsQuery,
  PreviewBody,
  PreviewResult,
  ValidateBody,
  ValidateResult,
} from './formulas.schemas.ts'
import { checkFormula, formulaContext, listFunctions, previewFormula } from './formulas.service.ts'

const tags = ['Formulas']
const body = <T>(schema: T) => ({ body: { required: true, content: { 'application/json': { schema } } } })

const functionsRoute = createRoute({
  method: 'get',
  path: '/formulas/functions',
  tags,
  summary: 'The catalogue of formula functions',
  description:
    'Every function of calculated-column formulas with its syntax, parameters, return type and examples; `category` narrows it.',
  security: bearer,
  request: { query: FunctionsQuery },
  responses: { 200: json(FormulaFunction.array(), 'The functions, sorted by name'), ...errorResponses },
})

const validateRoute = createRoute({
  method: 'post',
  path: '/formulas/validate',
  tags,
  summary: 'Check a formula against a panel’s columns',
  description:
    'Answers every syntax, reference, type and circular error (ExpressionError with 0-based `position`), the derived dependencies and the inferred return type. Stores nothing.',
  security: bearer,
  request: body(ValidateBody),
  responses: { 200: json(ValidateResult, 'The check'), ...errorResponses },
})

const contextRoute = createRoute({
  method: 'get',
  path: '/formulas/context',
  tags,
  summary: 'The expression context of a panel for formula editors',
  security: bearer,
  request: { query: ContextQuery },
  responses: { 200: json(ExpressionContext, 'Columns, functions and constants'), ...errorResponses },
})

const previewRoute = createRoute({
  method: 'post',
  path: '/formulas/preview',
  tags,
  summary: 'Evaluate a formula without storing it',
  description:
    'With `values` (column name → value, and optionally a source `record`) answers one `value`; with `panelId` answers the values for the panel’s first rows (`limit` ≤ 20). A formula with static errors answers them in `errors`.',
  security: bearer,
  middleware: auditAccess('read', 'none'),
  request: body(PreviewBody),
  responses: { 200: json(PreviewResult, 'The preview'), ...errorResponses },
})

export const formulasRouter = createRouter()
  .openapi(functionsRoute, async (c) => {
    const query = c.req.valid('query')
    ctxOf(c, query)
    return sendJson(c, listFunctions(query.category), 200)
  })
  .openapi(validateRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, await checkFormula(ctxOf(c, input), input), 200)
  })
  .openapi(contextRoute, async (c) => {
    const query = c.req.valid('query')
    return sendJson(c, await formulaContext(ctxOf(c, query), query.panelId), 200)
  })
  .openapi(previewRoute, async (c) => {
    const input = c.req.valid('json')
    return sendJson(c, (await previewFormula(ctxOf(c, input), input)) as never, 200)
  })
