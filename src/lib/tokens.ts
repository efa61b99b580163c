import { sign } from 'hono/jwt'

export interface TokenRequest {
  tenantId: string
  userId: string
  role?: string
  /** Group names (issue 12): published views naming `userGroups` are visible to members only. */
  groups?: string[]
  /** Lifetime in seconds; spec §5.1: 24 hours. */
  ttlSeconds?: number
}

/** Signs an HS256 access token the way the deployment's identity provider would (spec §5.1). */
export async function signToken(secret: string, t: TokenRequest, nowMs = Date.now()) {
  const iat = Math.floor(nowMs / 1000)
  const payload = {
    sub: t.userId,
    tenantId: t.tenantId,
    userId: t.userId,
    ...(t.role ? { role: t.role } : {}),
    ...(t.groups?.length ? { groups: t.groups } : {}),
    iat,
    exp: iat + (t.ttlSeconds ?? 24 * 3600),
  }
  return sign(payload, secret, 'HS256')
}
