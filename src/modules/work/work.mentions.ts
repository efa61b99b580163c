import { type SQL, sql } from 'drizzle-orm'
import { type ServiceContext, serviceContext } from '../../context.ts'
import { AppError } from '../../errors.ts'
import { viewAccess } from '../views/views.access.ts'
import { findRow, openRows, type RowsAccess, type RowsPath } from './work.access.ts'

/**
 * `@userId` mentions in comments (WORKLIST.md §3, docs/worklist.md "Mentions"): who a text names,
 * which of them can read the row, and the notifications that tell them — one per comment and user.
 */

/** Users a comment may notify; further distinct mentions in one text are not notified. */
export const MAX_MENTIONS = 50

/** A userId as a mention spells it (the longest userId the API accepts is 255 characters). */
const MAX_USER_ID = 255

/**
 * `@` followed by letters, digits, `.`, `_` and `-`, where the `@` does not follow one of those
 * characters or another `@` (so `bob@example.com` mentions nobody).
 */
const MENTION = /(?<![A-Za-z0-9._@-])@([A-Za-z0-9._-]+)/g

/**
 * The distinct userIds a text mentions, in order of first mention. A mention's trailing dots are
 * sentence punctuation, not part of the id ("ask @bob." names `bob`).
 */
export function mentionedUsers(text: string): string[] {
  const users = new Set<string>()
  for (const match of text.matchAll(MENTION)) {
    const user = match[1].replace(/\.+$/, '')
    if (user.length > 0 && user.length <= MAX_USER_ID) users.add(user)
  }
  return [...users]
}

/**
 * Which of `users` can read the row on the path the comment was written through — never the
 * author. Users are not stored, so only what the sharing rules say of a user id alone can be judged
 * (no groups, no admin role):
 * - the panel's owner can read every row of it;
 * - on a view's path, a user the view's sharing admits with no groups — published and live, naming
 *   no `userGroups`, not password-protected (whether they know the password cannot be told), giving
 *   `read` (a copy: its source's rules too) — when the row is among those the view answers them
 *   (its filters with `@me` read as them).
 * At most MAX_MENTIONS users are judged.
 */
export async function mentionReaders(
  ctx: ServiceContext,
  access: RowsAccess,
  path: RowsPath,
  rowId: number,
  users: readonly string[],
): Promise<string[]> {
  const readers: string[] = []
  for (const user of users.filter((u) => u !== ctx.scope.userId).slice(0, MAX_MENTIONS)) {
    if (user === access.panel.userId || (await readsThroughView(ctx, access, path, rowId, user))) readers.push(user)
  }
  return readers
}

/**
 * The mention notifications of a comment, for the batch that writes it: one per reader, of type
 * `mention`, about the view the comment was written through (0 on the panel's path), deduplicated
 * per comment and user (`mention:<commentId>`), so a user named twice, or again in an edit, is
 * notified once. `comment` selects the comment's `id` (nothing: no notification).
 */
export function mentionNotificationStatement(
  ctx: ServiceContext,
  n: { readers: readonly string[]; viewId: number | undefined; comment: SQL; message: string; at: string },
): SQL {
  return sql`INSERT INTO notifications (tenant_id, user_id, view_id, type, impact, message, is_read, dedupe_key, created_at)
    SELECT ${ctx.scope.tenantId}, j.value, ${n.viewId ?? 0}, 'mention', 'info', ${n.message}, 0, 'mention:' || c.id, ${n.at}
    FROM json_each(${JSON.stringify(n.readers)}) j, (${n.comment}) c
    WHERE true -- (else SQLite reads the ON below as a join's)
    ON CONFLICT DO NOTHING`
}

/** The message of a mention notification (`where`: the view or panel it was written in). */
export const mentionMessage = (author: string, key: string, where: string) =>
  `${author} mentioned you in a comment on row "${key}" (${where})`

// --- Internal helpers ---

/** True when `user`, with no groups and no admin role, reads the row through the path's view. */
async function readsThroughView(
  ctx: ServiceContext,
  access: RowsAccess,
  path: RowsPath,
  rowId: number,
  user: string,
): Promise<boolean> {
  if (!access.view || !('viewId' in path)) return false
  const scope = { tenantId: ctx.scope.tenantId, userId: user, isAdmin: false, groups: [] }
  const sharing = viewAccess(access.view.row, scope, ctx.clock.now())
  if (!sharing.visible || sharing.needsPassword || !sharing.permissions.has('read')) return false
  // The path as that user would open it: no password, not recorded in this request's read audit.
  const asUser = serviceContext(ctx, scope, { ...ctx.meta, viewPassword: undefined })
  asUser.access = undefined
  try {
    await findRow(asUser, await openRows(asUser, path), rowId)
    return true
  } catch (err) {
    if (err instanceof AppError) return false
    throw err
  }
}
