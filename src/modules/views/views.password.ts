import type { ServiceContext } from '../../context.ts'
import { AppError } from '../../errors.ts'

/**
 * Passwords of password-protected views (issue 12, docs/view-sharing.md). The password is given
 * once at publish and kept only as a slow salted hash: PBKDF2-HMAC-SHA-256 through WebCrypto (every
 * runtime has it), `pbkdf2-sha256$<iterations>$<salt>$<hash>` in base64url. Other users send it in
 * `X-View-Password`. A correct password is remembered for the user and view for a while (in the
 * shared cache), so the slow hash runs once, not on every request (a Worker has little CPU per
 * request). Wrong or missing passwords are counted per user and view in the cache; past
 * MAX_FAILURES in FAILURE_WINDOW_SECONDS further attempts are refused with 429 until the window ends.
 */

const ITERATIONS = 100_000
const SALT_BYTES = 16
const HASH_BITS = 256
export const MAX_FAILURES = 5
export const FAILURE_WINDOW_SECONDS = 15 * 60
const REMEMBER_SECONDS = 10 * 60

const encoder = new TextEncoder()

const b64 = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
const unb64 = (text: string) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(password), 'PBKDF2', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: salt as BufferSource, iterations },
    key,
    HASH_BITS,
  )
  return new Uint8Array(bits)
}

/** The stored form of a new password. */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES))
  return `pbkdf2-sha256$${ITERATIONS}$${b64(salt)}$${b64(await derive(password, salt, ITERATIONS))}`
}

/** True when `password` is the one `stored` was made from (compared in constant time). */
export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const [scheme, iterations, salt, hash] = stored.split('$')
  if (scheme !== 'pbkdf2-sha256' || !iterations || !salt || !hash) return false
  const expected = unb64(hash)
  const actual = await derive(password, unb64(salt), Number(iterations))
  if (actual.length !== expected.length) return false
  let diff = 0
  for (let i = 0; i < actual.length; i++) diff |= actual[i] ^ expected[i]
  return diff === 0
}

interface Failures {
  count: number
  until: number
}

/**
 * Checks the caller's X-View-Password against the view's stored hash: 403 VIEW_PASSWORD_REQUIRED
 * when none was sent, 403 VIEW_PASSWORD_INVALID when it is wrong, 429 after too many failures.
 */
export async function requireViewPassword(ctx: ServiceContext, viewId: number, stored: string | undefined): Promise<void> {
  const { tenantId, userId } = ctx.scope
  const failuresKey = `view-password-failures:${viewId}:${userId}`
  const failures = await ctx.cache.get<Failures>(tenantId, failuresKey)
  const now = ctx.clock.now().getTime()
  if (failures && failures.count >= MAX_FAILURES && failures.until > now) {
    const err = new AppError('RATE_LIMITED', 'Too many wrong passwords for this view; try again later')
    err.headers['Retry-After'] = String(Math.ceil((failures.until - now) / 1000))
    throw err
  }
  const given = ctx.meta.viewPassword
  if (given !== undefined && given !== '' && stored) {
    const rememberKey = `view-password-ok:${viewId}:${userId}:${await fingerprint(given, stored)}`
    if (await ctx.cache.get<boolean>(tenantId, rememberKey)) return
    if (await passwordMatches(given, stored)) {
      await ctx.cache.set(tenantId, rememberKey, true, REMEMBER_SECONDS)
      return
    }
  }
  const live = failures && failures.until > now ? failures : { count: 0, until: now + FAILURE_WINDOW_SECONDS * 1000 }
  await ctx.cache.set(tenantId, failuresKey, { count: live.count + 1, until: live.until }, FAILURE_WINDOW_SECONDS)
  throw given === undefined || given === ''
    ? new AppError('VIEW_PASSWORD_REQUIRED', 'This view is password-protected: send its password in the X-View-Password header')
    : new AppError('VIEW_PASSWORD_INVALID', 'The X-View-Password given for this view is wrong')
}

/** A fast digest naming one (password, stored hash) pair, so the cache never holds the password. */
async function fingerprint(password: string, stored: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(`${stored}\n${password}`))
  return b64(new Uint8Array(digest))
}
