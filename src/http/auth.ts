import { type ServiceContext, serviceContext } from '../context.ts'
import { tenantDenied, unauthorized, userDenied } from '../errors.ts'
import { type AppContext, requestMeta } from './context.ts'

/**
 * Bearer-token authentication for /api (spec §5, CONTRACT: Authentication): puts the verified claims
 * on `c.var.claims`. A token verified before is answered synchronously (no promise on the hot
 * path); a new one returns the verification's promise. With AUTH_DISABLED (development only) no
 * token is read and `ctxOf` takes tenant and user from the request.
 */
export function authenticate(c: AppContext): Promise<void> | undefined {
  const { config, tokens } = c.get('deps')
  if (config.authDisabled || c.req.method === 'OPTIONS') return undefined
  const header = c.req.header('authorization')
  const match = header?.match(BEARER)
  if (!match) {
    const err = unauthorized('UNAUTHORIZED', 'A bearer token is required')
    err.headers['WWW-Authenticate'] = 'Bearer realm="panels"'
    throw err
  }
  const token = match[1]
  try {
    const known = tokens.cached(token)
    if (known) {
      c.set('claims', known)
      return undefined
    }
  } catch (err) {
    throw invalidToken(err)
  }
  return tokens.verify(token).then(
    (claims) => {
      c.set('claims', claims)
    },
    (err) => {
      throw invalidToken(err)
    },
  )
}

/** A token refusal answers with the `WWW-Authenticate` challenge of RFC 6750. */
function invalidToken(err: unknown) {
  if (err && typeof err === 'object' && 'headers' in err) {
    ;(err as { headers: Record<string, string> }).headers['WWW-Authenticate'] = 'Bearer error="invalid_token"'
  }
  return err
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/** AUTH_DISABLED (development): the caller's groups from a comma-separated X-User-Groups header. */
const devGroups = (header: string | undefined) =>
  header === undefined
    ? undefined
    : header
        .split(',')
        .map((g) => g.trim())
        .filter(Boolean)

export interface TenantClaim {
  tenantId?: string
  userId?: string
}

/**
 * The tenant guard (spec §5.3–5.4): compares the request's `tenantId`/`userId` (already validated
 * by the route's schema, so 400 comes before 403) with the token's, and builds the service
 * context scoped to that tenant. An admin token may act for another user of its tenant. In
 * single-tenant mode (SINGLE_TENANT_ID) a request naming another tenant, or carrying a token of
 * another tenant, is refused the same way.
 */
export function ctxOf(c: AppContext, ...inputs: (TenantClaim | undefined)[]): ServiceContext {
  const deps = c.get('deps')
  let tenantId: string | undefined
  let userId: string | undefined
  for (const input of inputs) {
    if (!input) continue
    if (input.tenantId !== undefined) {
      if (tenantId !== undefined && tenantId !== input.tenantId) throw tenantDenied()
      tenantId = input.tenantId
    }
    if (input.userId !== undefined) {
      if (userId !== undefined && userId !== input.userId) throw userDenied()
      userId = input.userId
    }
  }
  const single = deps.config.singleTenantId
  if (single !== undefined && tenantId !== undefined && tenantId !== single) throw tenantDenied()
  const claims = c.get('claims')
  if (single !== undefined && claims && claims.tenantId !== single) throw tenantDenied()
  let scope: ServiceContext['scope']
  if (!claims) {
    scope = {
      tenantId: tenantId ?? deps.config.devTenantId,
      userId: userId ?? deps.config.devUserId,
      isAdmin: false,
      groups: devGroups(c.req.header('x-user-groups')) ?? deps.config.devUserGroups,
    }
  } else {
    if (tenantId !== undefined && tenantId !== claims.tenantId) throw tenantDenied()
    const isAdmin = claims.role === 'admin'
    if (userId !== undefined && userId !== claims.userId && !isAdmin) throw userDenied()
    scope = { tenantId: claims.tenantId, userId: userId ?? claims.userId, isAdmin, groups: claims.groups }
  }
  return serviceContext(deps, scope, requestMeta(c), c.get('access'))
}
