import { and, eq, lte, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { type Db, rowsAffected } from '../../db/client.ts'
import { viewPasswordFailures } from '../../db/schema-access.ts'
import { AppError } from '../../errors.ts'

/**
 * Passwords of password-protected views (issue 12, docs/view-sharing.md). The password is given
 * once at publish and kept only as a slow salted hash: PBKDF2-HMAC-SHA-256 through WebCrypto (every
 * runtime has it), `pbkdf2-sha256$<iterations>$<salt>$<hash>` in base64url. Other users send it in
 * `X-View-Password`. A correct password is remembered for the user and view for a while (in the
 * shared cache), so the slow hash runs once, not on every request (a Worker has little CPU per
 * request). Wrong passwords are counted per user and view in the database (`view_password_failures`):
 * past MAX_FAILURES in FAILURE_WINDOW_SECONDS further attempts are refused with 429 until the window
 * ends. A request without a password is told to send one and counts as nothing (issue 20).
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

/** 429 naming when the caller may try again (the end of the window their failures opened). */
function lockedOut(windowEndsAt: string, now: number): AppError {
  const err = new AppError('RATE_LIMITED', 'Too many wrong passwords for this view; try again later')
  err.headers['Retry-After'] = String(Math.max(1, Math.ceil((Date.parse(windowEndsAt) - now) / 1000)))
  return err
}

const failuresOf = (tenantId: string, viewId: number, userId: string) =>
  and(
    eq(viewPasswordFailures.tenantId, tenantId),
    eq(viewPasswordFailures.viewId, viewId),
    eq(viewPasswordFailures.userId, userId),
  )

/**
 * Takes one guess slot for the caller, atomically: one upsert that starts a new window when there is
 * none (or it has ended) and otherwise adds one while fewer than MAX_FAILURES are counted. Answers the
 * window the slot belongs to, or undefined when the caller is locked out. Parallel guesses and other
 * instances share the count, so at most MAX_FAILURES passwords are ever checked per window.
 */
async function takeGuessSlot(ctx: ServiceContext, viewId: number, now: number): Promise<string | undefined> {
  const { tenantId, userId } = ctx.scope
  const at = new Date(now).toISOString()
  const newWindow = new Date(now + FAILURE_WINDOW_SECONDS * 1000).toISOString()
  const t = viewPasswordFailures
  const ended = sql`${t.windowEndsAt} <= ${at}`
  const [slot] = await ctx.db
    .insert(t)
    .values({ tenantId, viewId, userId, count: 1, windowEndsAt: newWindow })
    .onConflictDoUpdate({
      target: [t.tenantId, t.viewId, t.userId],
      set: {
        count: sql`CASE WHEN ${ended} THEN 1 ELSE ${t.count} + 1 END`,
        windowEndsAt: sql`CASE WHEN ${ended} THEN ${newWindow} ELSE ${t.windowEndsAt} END`,
      },
      setWhere: sql`${ended} OR ${t.count} < ${MAX_FAILURES}`,
    })
    .returning({ windowEndsAt: t.windowEndsAt })
  return slot?.windowEndsAt
}

/** Gives back a slot taken for a password that proved right (only wrong passwords count). */
async function returnGuessSlot(ctx: ServiceContext, viewId: number, windowEndsAt: string): Promise<void> {
  const { tenantId, userId } = ctx.scope
  const t = viewPasswordFailures
  await ctx.db
    .update(t)
    .set({ count: sql`${t.count} - 1` })
    .where(and(failuresOf(tenantId, viewId, userId), eq(t.windowEndsAt, windowEndsAt), sql`${t.count} > 0`))
}

/**
 * Checks the caller's X-View-Password against the view's stored hash: 403 VIEW_PASSWORD_REQUIRED
 * when none was sent (not counted), 403 VIEW_PASSWORD_INVALID when it is wrong (counted), 429 while
 * MAX_FAILURES wrong ones of the current window are counted, whatever the request sends.
 */
export async function requireViewPassword(ctx: ServiceContext, viewId: number, stored: string | undefined): Promise<void> {
  const { tenantId, userId } = ctx.scope
  const now = ctx.clock.now().getTime()
  const [failures] = await ctx.db
    .select({ count: viewPasswordFailures.count, windowEndsAt: viewPasswordFailures.windowEndsAt })
    .from(viewPasswordFailures)
    .where(failuresOf(tenantId, viewId, userId))
  if (failures && failures.count >= MAX_FAILURES && Date.parse(failures.windowEndsAt) > now) {
    throw lockedOut(failures.windowEndsAt, now)
  }
  const given = ctx.meta.viewPassword
  if (given === undefined || given === '') {
    throw new AppError(
      'VIEW_PASSWORD_REQUIRED',
      'This view is password-protected: send its password in the X-View-Password header',
    )
  }
  const rememberKey = stored && `view-password-ok:${viewId}:${userId}:${await fingerprint(given, stored)}`
  if (rememberKey && (await ctx.cache.get<boolean>(tenantId, rememberKey))) return
  const slot = await takeGuessSlot(ctx, viewId, now)
  if (slot === undefined) {
    const [current] = await ctx.db
      .select({ windowEndsAt: viewPasswordFailures.windowEndsAt })
      .from(viewPasswordFailures)
      .where(failuresOf(tenantId, viewId, userId))
    throw lockedOut(current?.windowEndsAt ?? new Date(now + FAILURE_WINDOW_SECONDS * 1000).toISOString(), now)
  }
  if (rememberKey && stored && (await passwordMatches(given, stored))) {
    await returnGuessSlot(ctx, viewId, slot)
    await ctx.cache.set(tenantId, rememberKey, true, REMEMBER_SECONDS)
    return
  }
  throw new AppError('VIEW_PASSWORD_INVALID', 'The X-View-Password given for this view is wrong')
}

/** Deletes the failure counts whose window has ended (the scheduler's step); answers how many. */
export async function pruneViewPasswordFailures(db: Db, now: Date): Promise<number> {
  return rowsAffected(await db.delete(viewPasswordFailures).where(lte(viewPasswordFailures.windowEndsAt, now.toISOString())))
}

/** A fast digest naming one (password, stored hash) pair, so the cache never holds the password. */
async function fingerprint(password: string, stored: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(`${stored}\n${password}`))
  return b64(new Uint8Array(digest))
}
