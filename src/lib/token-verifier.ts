import { verify } from 'hono/jwt'
import { unauthorized } from '../errors.ts'

export interface Claims {
  tenantId: string
  userId: string
  role?: string
  /** Group names (issue 12); none when the token carries no `groups` claim. */
  groups: readonly string[]
  exp: number
}

const MAX_GROUPS = 100

/** The `groups` claim: absent → none; anything but an array of at most 100 non-empty strings is invalid. */
function groupsOf(claim: unknown): readonly string[] {
  if (claim === undefined) return []
  if (
    !Array.isArray(claim) ||
    claim.length > MAX_GROUPS ||
    !claim.every((g) => typeof g === 'string' && g !== '' && g.length <= 255)
  )
    throw unauthorized('TOKEN_INVALID', "The token's groups claim must be a list of group names")
  return Object.freeze([...claim])
}

const MAX_CACHED = 10_000

/**
 * Verifies HS256 bearer tokens with hono/jwt (spec §5.1; any other alg, `none` included, fails),
 * requires `exp` and a `tenantId` claim, and remembers a verified token until its `exp`
 * (issue #2 allows it), so the signature check runs once per token rather than once per request.
 *
 * Hot path (docs/performance.md): `cached(token)` answers a known token synchronously (one Map
 * lookup and one clock read), so the request pays no promise for it. On a miss the HMAC key is the
 * WebCrypto key imported once per secret, which hono/jwt's `verify` accepts as is.
 */
export function createTokenVerifier(secret: string, now: () => number) {
  const verified = new Map<string, Claims>()
  let key: Promise<CryptoKey> | undefined
  const hmacKey = () =>
    (key ??= crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'verify',
    ]))

  /** The claims of a token verified earlier, `undefined` when unknown; throws when it has expired. */
  function cached(token: string): Claims | undefined {
    const known = verified.get(token)
    if (known === undefined) return undefined
    if (known.exp * 1000 > now()) return known
    verified.delete(token)
    throw unauthorized('TOKEN_EXPIRED', 'The token has expired')
  }

  async function verifyToken(token: string): Promise<Claims> {
    const known = cached(token)
    if (known) return known
    let payload: Record<string, unknown>
    try {
      payload = (await verify(token, await hmacKey(), { alg: 'HS256', exp: false, nbf: true, iat: false })) as Record<
        string,
        unknown
      >
    } catch {
      throw unauthorized('TOKEN_INVALID', 'The token is invalid')
    }
    const { exp, tenantId } = payload
    const userId = payload.userId ?? payload.sub
    if (typeof exp !== 'number' || !Number.isFinite(exp)) throw unauthorized('TOKEN_INVALID', 'The token has no exp claim')
    if (exp * 1000 <= now()) throw unauthorized('TOKEN_EXPIRED', 'The token has expired')
    if (typeof tenantId !== 'string' || tenantId === '') throw unauthorized('TOKEN_INVALID', 'The token has no tenantId claim')
    if (typeof userId !== 'string' || userId === '') throw unauthorized('TOKEN_INVALID', 'The token has no userId or sub claim')
    const groups = groupsOf(payload.groups)
    const claims: Claims = { tenantId, userId, exp, role: typeof payload.role === 'string' ? payload.role : undefined, groups }
    if (verified.size >= MAX_CACHED) verified.delete(verified.keys().next().value as string)
    verified.set(token, claims)
    return claims
  }

  return { verify: verifyToken, cached }
}

export type TokenVerifier = ReturnType<typeof createTokenVerifier>
