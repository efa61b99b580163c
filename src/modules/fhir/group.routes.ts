import { createRoute, z } from '@hono/zod-openapi'
import type { Context } from 'hono'
import { ctxOf } from '../../http/auth.ts'
import type { AppEnv } from '../../http/context.ts'
import { sendFhir } from '../../http/fhir.ts'
import { bearer, createRouter } from '../../http/router.ts'
import { auditAccess } from '../audit/audit.record.ts'
import { fhirBase } from './fhir.base.ts'
import { fhirResource } from './fhir.resource.ts'
import { groupSearchBundle, pageParams, viewIdOf } from './group.answers.ts'
import { parseGroupSearch, strictHandling } from './group.search.ts'
import { getPageGroup, MEMBER_INLINE_CAP, readGroup, readGroupPage } from './group.service.ts'

const tags = ['FHIR']

const searchRoute = createRoute({
  method: 'get',
  path: '/Group',
  tags,
  summary: 'Search the patient lists the caller may read (Group, searchset Bundle)',
  description:
    'The views the caller may read (as `GET /api/views` lists them) as `Group` resources without members (tagged SUBSETTED), in view id order. ' +
    'Parameters: `name` (starts with, case- and accent-insensitive; `name:exact`, `name:contains`; commas OR, repeats AND), ' +
    '`type` (`person`: every list), `_summary=true` (the default form) or `_summary=count` (the total only), `_count` (default 50, at most 1000), `_offset`. ' +
    'Unknown parameters are ignored, or refused with 400 under `Prefer: handling=strict`.',
  security: bearer,
  responses: { 200: fhirResource('A searchset Bundle of Groups', 'Bundle') },
})

const readRoute = createRoute({
  method: 'get',
  path: '/Group/{id}',
  tags,
  summary: 'Read a patient list (Group) with its members',
  description: `The view's rows as members \`{ entity: { reference: "Patient/<id>" } }\`, in the view's order; rows without a patient under the \`row-without-patient\` extension. A list of more than ${MEMBER_INLINE_CAP} rows is not answered in part: a 400 \`too-costly\` OperationOutcome gives the \`$getpage\` URL of its first page. Sharing rules, \`X-View-Password\` and the read audit as for \`GET /api/views/{id}/rows\`.`,
  security: bearer,
  middleware: auditAccess('read', 'view'),
  request: { params: z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: '1' }) }) },
  responses: { 200: fhirResource('The Group', 'Group') },
})

const pageDescription =
  "A page of the list (Argonaut Patient Lists): `offset` (default 0) and `count` (default 1000, at most 10000) rows in the view's order, as the Group with that page's members (tagged SUBSETTED unless the page is the whole list); the extensions `members-next-page` and `members-previous-page` give the URLs of the pages around it. The sharing rules and the read audit apply as for the read."

const getPageRoute = createRoute({
  method: 'get',
  path: '/Group/{id}/$getpage',
  tags,
  summary: 'A page of a patient list (GET)',
  description: pageDescription,
  security: bearer,
  middleware: auditAccess('read', 'view'),
  request: { params: z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: '1' }) }) },
  responses: { 200: fhirResource('The Group with the page of its members', 'Group') },
})

const PageParameters = z
  .object({
    resourceType: z.literal('Parameters'),
    parameter: z.array(z.object({ name: z.string(), valueInteger: z.number().int().optional() }).passthrough()).optional(),
  })
  .passthrough()
  .openapi('FhirGetPageParameters')

const postPageRoute = createRoute({
  method: 'post',
  path: '/Group/{id}/$getpage',
  tags,
  summary: 'A page of a patient list (POST, a Parameters resource)',
  description: `${pageDescription} The body is a \`Parameters\` resource with \`offset\` and \`count\` as \`valueInteger\`; without a body the query's are used.`,
  security: bearer,
  middleware: auditAccess('read', 'view'),
  request: {
    params: z.object({ id: z.string().openapi({ param: { name: 'id', in: 'path' }, example: '1' }) }),
    body: {
      required: false,
      content: { 'application/fhir+json': { schema: PageParameters }, 'application/json': { schema: PageParameters } },
    },
  },
  responses: { 200: fhirResource('The Group with the page of its members', 'Group') },
})

const queryPairs = (c: Context<AppEnv>): [string, string][] => [...new URL(c.req.url).searchParams.entries()]

export const groupRouter = createRouter()
  .openapi(searchRoute, async (c) => {
    const search = parseGroupSearch(queryPairs(c), strictHandling(c.req.header('prefer')))
    return sendFhir(c, await groupSearchBundle(ctxOf(c), search, fhirBase(c)), 200)
  })
  .openapi(readRoute, async (c) => {
    const ctx = ctxOf(c)
    return sendFhir(c, await readGroup(ctx, viewIdOf(ctx, c.req.valid('param').id), fhirBase(c)), 200)
  })
  .openapi(getPageRoute, async (c) => {
    const ctx = ctxOf(c)
    const id = viewIdOf(ctx, c.req.valid('param').id)
    const { offset, count } = pageParams(queryPairs(c))
    const base = fhirBase(c)
    return sendFhir(c, getPageGroup(await readGroupPage(ctx, id, offset, count, base), base), 200)
  })
  .openapi(postPageRoute, async (c) => {
    const ctx = ctxOf(c)
    const id = viewIdOf(ctx, c.req.valid('param').id)
    const body = c.req.valid('json') as z.infer<typeof PageParameters> | undefined
    const given: [string, string][] = body?.parameter
      ? body.parameter.map((p) => [p.name, p.valueInteger === undefined ? '' : String(p.valueInteger)])
      : queryPairs(c)
    const { offset, count } = pageParams(given)
    const base = fhirBase(c)
    return sendFhir(c, getPageGroup(await readGroupPage(ctx, id, offset, count, base), base), 200)
  })
