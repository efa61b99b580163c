import { sign } from 'hono/jwt'
import { signToken } from '../../src/lib/tokens.ts'
import { TEST_SECRET } from './app.ts'

/** A real HS256 token for the test secret (24 h from now by default). */
export const tokenFor = (
  tenantId: string,
  userId: string,
  extra: { role?: string; groups?: string[]; ttlSeconds?: number } = {},
) => signToken(TEST_SECRET, { tenantId, userId, ...extra })

export async function authHeaders(tenantId: string, userId: string, extra: { role?: string; groups?: string[] } = {}) {
  return { Authorization: `Bearer ${await tokenFor(tenantId, userId, extra)}`, 'Content-Type': 'application/json' }
}

/** Signs arbitrary claims with any secret, for invalid-token tests. */
export const signRaw = (payload: Record<string, unknown>, secret = TEST_SECRET) => sign(payload, secret, 'HS256')

/** An unsigned `alg: none` token carrying valid-looking claims. */
export function noneToken(payload: Record<string, unknown>) {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url')
  return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(payload)}.`
}
