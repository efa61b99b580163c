import { createRoute, OpenAPIHono, type RouteConfig, z } from '@hono/zod-openapi'
import type { AppEnv } from './context.ts'
import { defaultHook } from './errors.ts'

/** Every module's router: OpenAPIHono with the one validation hook (400, per-field details). */
export const createRouter = () => new OpenAPIHono<AppEnv>({ defaultHook: defaultHook as never })

export const ErrorBody = z
  .object({
    error: z.string().openapi({ example: 'Panel not found' }),
    statusCode: z.number().int().openapi({ example: 404 }),
    message: z.string().openapi({ example: 'Panel 999 not found for tenant tenant-123' }),
    code: z.string().openapi({ example: 'NOT_FOUND' }),
    details: z.any().nullable().openapi({ example: null }),
    timestamp: z.string().openapi({ example: '2026-01-01T12:00:00.000Z' }),
    requestId: z.string().optional().openapi({ example: '4b4e5c3a-7e0f-4d5b-9a53-2f1a2c3d4e5f' }),
  })
  .openapi('Error')

/** An OpenAPI response with a JSON body of `schema` (the routes' `responses` entries). */
export const json = <T>(schema: T, description: string) => ({ description, content: { 'application/json': { schema } } })

const errorResponse = (description: string) => json(ErrorBody, description)

/** Error responses every authenticated route may answer (spread into `responses`). */
export const errorResponses = {
  400: errorResponse('Invalid request (validation error, malformed JSON)'),
  401: errorResponse('Missing, invalid or expired bearer token'),
  403: errorResponse('Access denied to tenant or user'),
  404: errorResponse('Resource not found for this tenant'),
  413: errorResponse('Body too large'),
  415: errorResponse('Unsupported media type'),
  429: errorResponse('Rate limit exceeded'),
  500: errorResponse('Unexpected server error'),
} as const

export const conflictResponse = { 409: errorResponse('Conflict with the current state') } as const

export const bearer = [{ Bearer: [] }]

/** A positive integer path parameter named `name`. */
export const positiveId = (name: string) =>
  z
    .string()
    .regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')
    .transform(Number)
    .openapi({ param: { name, in: 'path' }, type: 'integer', example: 1 } as never)

export const IdParam = z.object({ id: positiveId('id') })
export const PanelIdParam = z.object({ panelId: positiveId('panelId') })
/** `{panelId}` and `{id}`: an item addressed under its panel (the nested aliases below). */
export const PanelItemParams = PanelIdParam.extend(IdParam.shape)

/**
 * The deprecated nested form `/panels/{panelId}<path>` of a flat item route, which the upstream
 * backend served and its API collection still calls (docs/decisions.md, "Nested aliases"): the
 * same request, answers and security, plus `panelId` in the path. Register it with the flat
 * route's handler; the service answers 404 when the item is not of that panel.
 */
export function nestedUnderPanel<P extends string, R extends Omit<RouteConfig, 'path' | 'middleware'> & { path: P }>(route: R) {
  const flat = `${route.method.toUpperCase()} ${route.path}`
  const nested = {
    ...route,
    path: `/panels/{panelId}${route.path}` as `/panels/{panelId}${P}`,
    deprecated: true,
    summary: `${route.summary} (deprecated alias of ${flat})`,
    description:
      `Deprecated alias of \`${flat}\`, kept for the upstream API's clients: same body, query, checks and answers. ` +
      `The item must belong to panel \`panelId\`, else 404. ${route.description ?? ''}`.trim(),
    request: { ...route.request, params: PanelItemParams },
  }
  return createRoute(nested as Omit<R, 'path' | 'request'> & Pick<typeof nested, 'path' | 'request'>)
}

export const TenantId = z.string().min(1).max(255).openapi({ example: 'tenant-123' })
export const UserId = z.string().min(1).max(255).openapi({ example: 'user-456' })

/** tenantId/userId where they may be omitted (default: the token's claims). */
export const TenantQuery = z.object({
  tenantId: TenantId.optional(),
  userId: UserId.optional(),
})

/** Body fields identifying the caller, optional unless the spec marks them required. */
export const TenantBody = {
  tenantId: TenantId.optional(),
  userId: UserId.optional(),
}

/** Query booleans: exactly `true` or `false` (CONTRACT: isRead=false selects unread). */
export const QueryBoolean = z.enum(['true', 'false']).transform((v) => v === 'true')

export const Timestamp = z.string().openapi({ example: '2026-01-01T12:00:00.000Z' })

export const JsonObject = z.record(z.string(), z.unknown())
