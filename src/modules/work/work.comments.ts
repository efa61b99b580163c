import { type SQL, sql } from 'drizzle-orm'
import type { ServiceContext } from '../../context.ts'
import { rowsAffected, runBatch } from '../../db/client.ts'
import { commentsDisabled, forbidden, notFound } from '../../errors.ts'
import { isoNow } from '../../lib/clock.ts'
import { appendEventsFrom } from '../../rowstore/events.ts'
import type { RecordRow } from '../../rowstore/query/row-shape.ts'
import { capturedIds, derivedWorkStatements } from '../../rowstore/work-sql.ts'
import { changeWork, rowWrite } from '../../rowstore/write.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { pageMeta } from '../rows/rows.service.ts'
import { publishConfigOf } from '../views/views.access.ts'
import type { LoadedView } from '../views/views.service.ts'
import { findRow, isManager, openRows, type RowsAccess, type RowsPath } from './work.access.ts'
import type { CommentDto, CommentPageDto, CommentsQueryInput } from './work.comments.schemas.ts'
import { mentionedUsers, mentionMessage, mentionNotificationStatement, mentionReaders } from './work.mentions.ts'

/**
 * Comments on a row (WORKLIST.md §3–§5, docs/worklist.md "Comments"), under the panel's rows and
 * a view's. They belong to the row's identity. Each change is one batch: the comment, the
 * identity's `comment_count` (added to in SQL, never read and written back) with its records' work
 * copy and the moves of the views that show or filter on `_commentCount` — through the row store's
 * work protocol without a new work `version` (work-sql.ts `derivedWorkStatements`) — a change
 * record (entityType `comment`), and for a new comment its `row.commented` event and the mention
 * notifications.
 *
 * Who may: reading needs the row (`read` on a view's path); writing a comment too; editing is the
 * author's alone; deleting the author's or a manager's. Panel `settings.enableComments: false`
 * turns comments off on every path, for everyone; on a view's path, readers other than the panel's
 * owner and tenant admins also need the view's `allowComments: true` — both 403 `COMMENTS_DISABLED`.
 */

/** `GET {rows}/{rowId}/comments`: the row's comments, oldest first (the newest last), paged. */
export async function listComments(
  ctx: ServiceContext,
  path: RowsPath,
  rowId: number,
  q: CommentsQueryInput,
  url: string,
): Promise<CommentPageDto> {
  const { access } = await openComments(ctx, path, rowId)
  const where = sql`c.tenant_id = ${ctx.scope.tenantId} AND c.panel_id = ${access.panel.id} AND c.row_id = ${rowId}`
  const [counted, rows] = await ctx.db.batch([
    ctx.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM row_comments c WHERE ${where}`),
    ctx.db.all<CommentRow>(
      sql`SELECT ${COLUMNS} FROM row_comments c WHERE ${where} ORDER BY c.id LIMIT ${q.limit} OFFSET ${(q.page - 1) * q.limit}`,
    ),
  ])
  noteAccess(ctx, { panelId: access.panel.id, viewId: access.view?.row.id, rowCount: 1 })
  return { data: rows.map(toDto), ...pageMeta(Number(counted[0].n), q.page, q.limit, url) }
}

/** `POST {rows}/{rowId}/comments`: a new comment by the caller, stored as given. */
export async function createComment(ctx: ServiceContext, path: RowsPath, rowId: number, text: string): Promise<CommentDto> {
  const { access, record } = await openComments(ctx, path, rowId)
  const at = isoNow(ctx.clock)
  const readers = await mentionReaders(ctx, access, path, rowId, mentionedUsers(text))
  const notify = await mentionNotices(ctx, access, record, readers, at)
  const { tenantId, userId } = ctx.scope
  const panelId = access.panel.id
  const [comment] = await changeCommentCount<CommentRow>(ctx, access, {
    pick: sql`SELECT ${rowId}`,
    delta: 1,
    at,
    apply: (captured, counted) => {
      // The comment just written: the newest of its row (the batch holds the database's write lock).
      const added = sql`SELECT max(id) FROM row_comments WHERE row_id IN (${captured})`
      return [
        sql`INSERT INTO row_comments (tenant_id, panel_id, row_id, author_id, text, created_at, updated_at)
          SELECT ${tenantId}, ${panelId}, p.row_id, ${userId}, ${text}, ${at}, ${at} FROM (${captured}) p`,
        ...counted,
        changeRecord(ctx, 'CREATE', sql`json_object('text', json_object('newValue', c.text))`, sql`c.id = (${added})`, at),
        ...appendEventsFrom(
          tenantId,
          sql`SELECT 0 AS ord, 'row.commented' AS type, ${panelId} AS panel_id, NULL AS view_id,
              i.data_source_id AS data_source_id, json_object('rowId', i.id, 'key', i.key, 'panelId', i.panel_id,
              'commentId', c.id, 'authorId', c.author_id, 'text', c.text) AS data
            FROM row_comments c JOIN row_identities i ON i.id = c.row_id WHERE c.id = (${added})`,
          at,
        ),
        ...notify(sql`SELECT id FROM row_comments WHERE id = (${added})`),
      ]
    },
    read: (captured) =>
      sql`SELECT ${COLUMNS} FROM row_comments c WHERE c.id = (SELECT max(id) FROM row_comments WHERE row_id IN (${captured}))`,
  })
  // Nothing captured: the row went (its source was deleted) after it was found.
  if (!comment) throw notFound('Row', rowId, tenantId)
  return toDto(comment)
}

/** `PATCH {rows}/{rowId}/comments/{commentId}`: the author's new text (anyone else: 403). */
export async function updateComment(
  ctx: ServiceContext,
  path: RowsPath,
  rowId: number,
  commentId: number,
  text: string,
): Promise<CommentDto> {
  const { access, record } = await openComments(ctx, path, rowId)
  const before = await findComment(ctx, access, rowId, commentId)
  const me = ctx.scope.userId
  if (before.authorId !== me) throw forbidden(`Only the author (${before.authorId}) may edit comment ${commentId}`)
  if (before.text === text) return before
  const at = isoNow(ctx.clock)
  const readers = await mentionReaders(ctx, access, path, rowId, mentionedUsers(text))
  const notify = await mentionNotices(ctx, access, record, readers, at)
  const mine = sql`c.id = ${commentId} AND c.row_id = ${rowId} AND c.tenant_id = ${ctx.scope.tenantId} AND c.author_id = ${me}`
  const results = await runBatch(ctx.db, [
    // The change record first: it reads the text as it was.
    changeRecord(
      ctx,
      'UPDATE',
      sql`json_object('text', json_object('oldValue', c.text, 'newValue', ${text}))`,
      sql`${mine} AND c.text IS NOT ${text}`,
      at,
    ),
    sql`UPDATE row_comments AS c SET text = ${text}, updated_at = ${at} WHERE ${mine}`,
    ...notify(sql`SELECT c.id FROM row_comments c WHERE ${mine}`),
  ])
  // Nothing updated: the comment was deleted after it was found.
  if (rowsAffected(results[1]) === 0) throw notFound('Comment', commentId, ctx.scope.tenantId)
  return { ...before, text, updatedAt: at }
}

/** `DELETE {rows}/{rowId}/comments/{commentId}`: by its author or a manager (anyone else: 403). */
export async function deleteComment(ctx: ServiceContext, path: RowsPath, rowId: number, commentId: number): Promise<void> {
  const { access } = await openComments(ctx, path, rowId)
  const before = await findComment(ctx, access, rowId, commentId)
  const me = ctx.scope.userId
  const manager = isManager(access)
  if (before.authorId !== me && !manager) {
    throw forbidden(`Only the author (${before.authorId}) or a manager may delete comment ${commentId}`)
  }
  const at = isoNow(ctx.clock)
  const deleted = await changeCommentCount(ctx, access, {
    // Only while the comment is there (and still the caller's, unless a manager deletes it).
    pick: sql`SELECT row_id FROM row_comments WHERE id = ${commentId} AND row_id = ${rowId}
      AND tenant_id = ${ctx.scope.tenantId} AND ${manager ? sql`1` : sql`author_id = ${me}`}`,
    delta: -1,
    at,
    apply: (captured, counted) => {
      const it = sql`c.id = ${commentId} AND c.row_id IN (${captured})`
      return [
        changeRecord(ctx, 'DELETE', sql`json_object('text', json_object('oldValue', c.text))`, it, at),
        sql`DELETE FROM row_comments AS c WHERE ${it}`,
        ...counted,
      ]
    },
    read: (captured) => sql`SELECT row_id FROM (${captured})`,
  })
  if (deleted.length === 0) throw notFound('Comment', commentId, ctx.scope.tenantId)
}

// --- Internal helpers ---

interface CommentRow {
  id: number
  rowId: number
  panelId: number
  authorId: string
  text: string
  createdAt: string
  updatedAt: string
}

const COLUMNS = sql.raw(`c.id AS id, c.row_id AS rowId, c.panel_id AS panelId, c.author_id AS authorId, c.text AS text,
  c.created_at AS createdAt, c.updated_at AS updatedAt`)

const toDto = (r: CommentRow): CommentDto => ({
  id: Number(r.id),
  rowId: Number(r.rowId),
  panelId: Number(r.panelId),
  authorId: r.authorId,
  text: r.text,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
})

/** The path's rows opened for comments on `rowId`: 404 for a row the path does not answer, then the gates. */
async function openComments(
  ctx: ServiceContext,
  path: RowsPath,
  rowId: number,
): Promise<{ access: RowsAccess; record: RecordRow }> {
  const access = await openRows(ctx, path)
  const record = await findRow(ctx, access, rowId)
  if (!access.panel.enableComments) throw commentsDisabled(`Comments are turned off for panel ${access.panel.id}`)
  if (access.view && !access.full && !(await viewAllowsComments(ctx, access.view))) {
    throw commentsDisabled(`View ${access.view.row.id} does not allow comments (publishConfig.allowComments)`)
  }
  return { access, record }
}

/**
 * The view's `publishConfig.allowComments`; for a copy (made with `create`), that of the view it
 * was copied from, as its permissions are (a copy gives no more than its source).
 */
async function viewAllowsComments(ctx: ServiceContext, view: LoadedView): Promise<boolean> {
  if (view.row.sourceViewId === null) return publishConfigOf(view.row).allowComments === true
  const [source] = await ctx.db.all<{ publish_config: string | null }>(
    sql`SELECT publish_config FROM views WHERE id = ${view.row.sourceViewId} AND tenant_id = ${ctx.scope.tenantId}`,
  )
  const config = source?.publish_config ? (JSON.parse(source.publish_config) as Record<string, unknown>) : null
  return config?.allowComments === true
}

/** A comment of the row on the path, or 404 (another row's, panel's or tenant's included). */
async function findComment(ctx: ServiceContext, access: RowsAccess, rowId: number, commentId: number): Promise<CommentDto> {
  const [row] = await ctx.db.all<CommentRow>(
    sql`SELECT ${COLUMNS} FROM row_comments c WHERE c.id = ${commentId} AND c.row_id = ${rowId}
      AND c.panel_id = ${access.panel.id} AND c.tenant_id = ${ctx.scope.tenantId}`,
  )
  if (!row) throw notFound('Comment', commentId, ctx.scope.tenantId)
  return toDto(row)
}

/**
 * One comment change that moves the row's comment count by `delta`, through the row store's work
 * protocol (write.ts `changeWork` with work-sql.ts `derivedWorkStatements`): the identity `pick`
 * selects is captured in the transaction — nothing is written when it selects none — and `apply`
 * builds the batch's statements around `counted` (the count's change and the records' work copy)
 * from the captured ids. Answers the rows `read` selects.
 */
async function changeCommentCount<T>(
  ctx: ServiceContext,
  access: RowsAccess,
  change: { pick: SQL; delta: 1 | -1; at: string; apply: (captured: SQL, counted: SQL[]) => SQL[]; read: (captured: SQL) => SQL },
): Promise<T[]> {
  const { tenantId, userId } = ctx.scope
  const panelId = access.panel.id
  const write = rowWrite({
    tenantId,
    panelId,
    actorId: userId,
    cause: 'work',
    eventKey: `comment:${crypto.randomUUID()}`,
    at: change.at,
  })
  const { capture, apply } = derivedWorkStatements({
    token: write.token,
    tenantId,
    panelId,
    pick: change.pick,
    set: change.delta > 0 ? sql`comment_count = comment_count + 1` : sql`comment_count = comment_count - 1`,
  })
  const captured = capturedIds(write.token)
  const rows = await changeWork(ctx, {
    panel: { tenantId, panelId },
    write,
    membership: await access.membership?.(change.at),
    capture,
    apply: change.apply(captured, apply),
    read: change.read(captured),
  })
  return rows as T[]
}

/** A change record (entityType `comment`) per comment `which` selects (alias `c`), with `changes` built from it. */
function changeRecord(ctx: ServiceContext, action: 'CREATE' | 'UPDATE' | 'DELETE', changes: SQL, which: SQL, at: string): SQL {
  const { userAgent, ipAddress, source } = ctx.meta
  const metadata = JSON.stringify({ source, ...(userAgent ? { userAgent } : {}), ...(ipAddress ? { ipAddress } : {}) })
  return sql`INSERT INTO changes (tenant_id, user_id, panel_id, entity_type, entity_id, action, changes, metadata, created_at)
    SELECT c.tenant_id, ${ctx.scope.userId}, c.panel_id, 'comment', c.id, ${action}, ${changes}, ${metadata}, ${at}
    FROM row_comments c WHERE ${which}`
}

/**
 * The mention notifications of a comment for `readers`, as statements for the comment selected
 * (`id`) by the SQL given (none without readers).
 */
async function mentionNotices(
  ctx: ServiceContext,
  access: RowsAccess,
  record: RecordRow,
  readers: string[],
  at: string,
): Promise<(comment: SQL) => SQL[]> {
  if (readers.length === 0) return () => []
  const where = access.view ? `view "${access.view.row.name}"` : `panel "${await panelName(ctx, access.panel.id)}"`
  const message = mentionMessage(ctx.scope.userId, record.key, where)
  return (comment) => [mentionNotificationStatement(ctx, { readers, viewId: access.view?.row.id, comment, message, at })]
}

async function panelName(ctx: ServiceContext, panelId: number): Promise<string> {
  const [row] = await ctx.db.all<{ name: string }>(sql`SELECT name FROM panels WHERE id = ${panelId}`)
  return row?.name ?? String(panelId)
}
