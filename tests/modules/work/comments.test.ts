import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mentionedUsers } from '../../../src/modules/work/work.mentions.ts'
import { makeTestApp } from '../../helpers/app.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { type RowsWorld, rowsWorld } from '../rows/fixtures.ts'

/**
 * Comments on a row (WORKLIST.md §3–§5; docs/worklist.md "Comments", "Mentions"): CRUD under the
 * panel's rows and a view's, paging (newest last), who may edit and delete, the gates
 * (allowComments, enableComments), mentions, `_commentCount` in views, the work version left
 * alone, change records, `row.commented`, and what goes with a deleted panel or source.
 */

let w: RowsWorld
let root: TestClient
let carol: TestClient
let dave: TestClient
beforeAll(async () => {
  w = await rowsWorld()
  root = clientFor(w.t.app, 'tenant-a', 'root', { role: 'admin' })
  carol = clientFor(w.t.app, 'tenant-a', 'carol')
  dave = clientFor(w.t.app, 'tenant-a', 'dave')
})
afterAll(() => w.server.close())

const onPanel = (rowId: number, panelId = w.panelId) => `/api/panels/${panelId}/rows/${rowId}/comments`
const onView = (viewId: number, rowId: number) => `/api/views/${viewId}/rows/${rowId}/comments`

/** A view of alice's on the panel, published with `publishConfig` (unpublished when null). */
async function view(name: string, publishConfig: Record<string, unknown> | null, extra: Record<string, unknown> = {}) {
  const created = await w.alice.post('/api/views', { name, panelId: w.panelId, ...extra })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.id as number
  if (publishConfig) {
    const published = await w.alice.post(`/api/views/${id}/publish`, { publishConfig })
    expect(published.status, JSON.stringify(published.body)).toBe(200)
  }
  return id
}

async function lastSeq(): Promise<number> {
  const rs = await w.t.client.execute({
    sql: "SELECT coalesce(max(seq), 0) AS s FROM events WHERE tenant_id = 'tenant-a'",
    args: [],
  })
  return Number(rs.rows[0].s)
}

async function eventsSince(seq: number) {
  const rs = await w.t.client.execute({
    sql: "SELECT type, panel_id, view_id, data FROM events WHERE tenant_id = 'tenant-a' AND seq > ? ORDER BY seq",
    args: [seq],
  })
  return rs.rows.map((r) => ({
    type: String(r.type),
    panelId: r.panel_id === null ? null : Number(r.panel_id),
    viewId: r.view_id === null ? null : Number(r.view_id),
    data: JSON.parse(String(r.data)),
  }))
}

/** The caller's mention notifications about comment `commentId`. */
async function mentionsOf(client: TestClient, commentId: number) {
  const res = await client.get('/api/notifications/views?limit=100')
  expect(res.status).toBe(200)
  return (res.body.notifications as { type: string; comment?: { id: number } | null }[]).filter(
    (n) => n.type === 'mention' && n.comment?.id === commentId,
  )
}

async function work(client: TestClient, rowId: number) {
  const res = await client.get(`/api/panels/${w.panelId}/rows/${rowId}`)
  expect(res.status).toBe(200)
  return { work: res.body._work, etag: res.headers.get('etag') }
}

describe('comments under the panel’s rows', () => {
  it('writes, lists, edits and deletes a comment; the count follows, the version does not; each change is recorded', async () => {
    const text = '  Called <b>twice</b>,\nno answer  '
    const created = await w.alice.post(onPanel(w.ids.p1), { text })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body).toMatchObject({ rowId: w.ids.p1, panelId: w.panelId, authorId: 'alice', text })
    const id = created.body.id as number
    expect(await work(w.alice, w.ids.p1)).toEqual({ work: expect.objectContaining({ commentCount: 1, version: 0 }), etag: '"0"' })

    const edited = await w.alice.patch(`${onPanel(w.ids.p1)}/${id}`, { text: 'Called three times' })
    expect(edited.status, JSON.stringify(edited.body)).toBe(200)
    expect(edited.body).toMatchObject({ id, text: 'Called three times', createdAt: created.body.createdAt })
    const listed = await w.alice.get(onPanel(w.ids.p1))
    expect(listed.status).toBe(200)
    expect(listed.body.data).toEqual([edited.body])

    expect((await w.alice.delete(`${onPanel(w.ids.p1)}/${id}`)).status).toBe(204)
    expect((await w.alice.get(onPanel(w.ids.p1))).body).toMatchObject({ data: [], meta: { total: 0 } })
    expect(await work(w.alice, w.ids.p1)).toEqual({ work: expect.objectContaining({ commentCount: 0, version: 0 }), etag: '"0"' })
    expect((await w.alice.delete(`${onPanel(w.ids.p1)}/${id}`)).status).toBe(404)

    const changes = await w.alice.get(`/api/changes/panels?panelId=${w.panelId}&entityType=comment&limit=100`)
    expect(changes.status).toBe(200)
    const mine = (changes.body.changes as { entityId: number }[]).filter((c) => c.entityId === id)
    expect(mine).toMatchObject([
      { entityType: 'comment', action: 'DELETE', userId: 'alice', changes: { text: { oldValue: 'Called three times' } } },
      { action: 'UPDATE', changes: { text: { oldValue: text, newValue: 'Called three times' } } },
      { action: 'CREATE', changes: { text: { newValue: text } } },
    ])
  })

  it('refuses empty, blank, too long and missing text with a 400 naming text; 10,000 characters are fine', async () => {
    for (const body of [{ text: '' }, { text: ' \n\t ' }, { text: 'x'.repeat(10_001) }, {}, { text: 5 }]) {
      const res = await w.alice.post(onPanel(w.ids.p1), body)
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(400)
      expect(JSON.stringify(res.body.details)).toContain('text')
    }
    const longest = await w.alice.post(onPanel(w.ids.p1), { text: 'x'.repeat(10_000) })
    expect(longest.status).toBe(201)
    // Characters, not UTF-16 units: 10,000 emoji are 10,000 characters.
    const emoji = await w.alice.post(onPanel(w.ids.p1), { text: '😀'.repeat(10_000) })
    expect(emoji.status).toBe(201)
    expect(emoji.body.text).toBe('😀'.repeat(10_000))
    const blank = await w.alice.patch(`${onPanel(w.ids.p1)}/${longest.body.id}`, { text: '   ' })
    expect(blank.status).toBe(400)
    expect(JSON.stringify(blank.body.details)).toContain('text')
    for (const created of [longest, emoji])
      expect((await w.alice.delete(`${onPanel(w.ids.p1)}/${created.body.id}`)).status).toBe(204)
  })

  it('lists oldest first with the newest last, paged as the rows are', async () => {
    for (const text of ['c1', 'c2', 'c3', 'c4', 'c5']) expect((await w.alice.post(onPanel(w.ids.p2), { text })).status).toBe(201)
    const first = await w.alice.get(`${onPanel(w.ids.p2)}?limit=2`)
    expect(first.status).toBe(200)
    expect(first.body.data.map((c: { text: string }) => c.text)).toEqual(['c1', 'c2'])
    expect(first.body.meta).toEqual({ total: 5, page: 1, limit: 2, pages: 3, hasNext: true, hasPrev: false })
    expect(first.body.links.next).toContain('page=2')
    expect(first.body.links.prev).toBeNull()
    const last = await w.alice.get(`${onPanel(w.ids.p2)}?limit=2&page=3`)
    expect(last.body.data.map((c: { text: string }) => c.text)).toEqual(['c5'])
    expect(last.body.meta).toMatchObject({ hasNext: false, hasPrev: true })
    expect((await w.alice.get(`${onPanel(w.ids.p2)}?limit=2&page=4`)).body.data).toEqual([])
    expect((await w.alice.get(`${onPanel(w.ids.p2)}?limit=101`)).status).toBe(400)
    expect((await work(w.alice, w.ids.p2)).work).toMatchObject({ commentCount: 5, version: 0 })
  })

  it('answers 404 for another tenant, another panel, another row, and a row or comment it does not hold', async () => {
    const comment = await w.alice.post(onPanel(w.ids.p3), { text: 'mine' })
    expect(comment.status).toBe(201)
    const one = `${onPanel(w.ids.p3)}/${comment.body.id}`
    // Another tenant, and a user of the tenant who does not own the panel.
    for (const client of [w.eve, w.bob]) {
      expect((await client.get(onPanel(w.ids.p3))).status).toBe(404)
      expect((await client.post(onPanel(w.ids.p3), { text: 'hi' })).status).toBe(404)
      expect((await client.patch(one, { text: 'hi' })).status).toBe(404)
      expect((await client.delete(one)).status).toBe(404)
    }
    // An unknown row; the comment addressed under another row.
    expect((await w.alice.get(onPanel(999_999))).status).toBe(404)
    expect((await w.alice.post(onPanel(999_999), { text: 'hi' })).status).toBe(404)
    expect((await w.alice.patch(`${onPanel(w.ids.p4)}/${comment.body.id}`, { text: 'moved?' })).status).toBe(404)
    expect((await w.alice.delete(`${onPanel(w.ids.p4)}/${comment.body.id}`)).status).toBe(404)
    expect((await w.alice.delete(`${onPanel(w.ids.p3)}/999999`)).status).toBe(404)
    // Another panel of alice's: its path answers neither this panel's rows nor their comments.
    const other = await otherPanel()
    expect((await w.alice.get(onPanel(w.ids.p3, other.panelId))).status).toBe(404)
    const theirs = other.ids.p1
    expect((await w.alice.patch(`${onPanel(theirs, other.panelId)}/${comment.body.id}`, { text: 'x' })).status).toBe(404)
    expect((await w.alice.delete(`${onPanel(theirs, other.panelId)}/${comment.body.id}`)).status).toBe(404)
    expect((await w.alice.get(one)).status).toBe(404) // no GET of one comment: the route does not exist
    expect((await w.alice.get(onPanel(w.ids.p3))).body.data).toHaveLength(1)
  })
})

describe('who may comment on a view’s rows', () => {
  let readOnly: number
  let commenting: number
  let managing: number
  beforeAll(async () => {
    readOnly = await view('Read only', { permissions: ['read'], userGroups: [] })
    commenting = await view('Commenting', { permissions: ['read'], userGroups: [], allowComments: true })
    managing = await view('Managing', { permissions: ['read', 'manage'], userGroups: [], allowComments: true })
  })

  it('needs allowComments on the view for its readers (403 COMMENTS_DISABLED); the panel’s owner and admins are not bound', async () => {
    const get = await w.bob.get(onView(readOnly, w.ids.p5))
    expect(get.status).toBe(403)
    expect(get.body.code).toBe('COMMENTS_DISABLED')
    const post = await w.bob.post(onView(readOnly, w.ids.p5), { text: 'hello' })
    expect(post.status).toBe(403)
    expect(post.body.code).toBe('COMMENTS_DISABLED')
    expect((await w.alice.get(onView(readOnly, w.ids.p5))).status).toBe(200)
    expect((await root.post(onView(readOnly, w.ids.p5), { text: 'admin note' })).status).toBe(201)
    // Allowed: read is enough to comment, and every reader sees the comments.
    const bobs = await w.bob.post(onView(commenting, w.ids.p5), { text: 'from bob' })
    expect(bobs.status, JSON.stringify(bobs.body)).toBe(201)
    expect(bobs.body.authorId).toBe('bob')
    const seen = await carol.get(onView(commenting, w.ids.p5))
    expect(seen.body.data.map((c: { text: string }) => c.text)).toEqual(['admin note', 'from bob'])
    // An unpublished view is not there for them.
    const draft = await view('Draft', null)
    expect((await w.bob.get(onView(draft, w.ids.p5))).status).toBe(404)
  })

  it('follows, on a copy, the allowComments of the view it was copied from', async () => {
    for (const allowComments of [false, true]) {
      const source = await view(`Copyable ${allowComments}`, { permissions: ['read', 'create'], userGroups: [], allowComments })
      const copy = await w.bob.post(`/api/views/${source}/copy`, {})
      expect(copy.status, JSON.stringify(copy.body)).toBe(201)
      // bob owns the copy, and publishing it allowing comments gives no more than its source.
      expect(
        (
          await w.bob.post(`/api/views/${copy.body.id}/publish`, {
            publishConfig: { permissions: ['read'], userGroups: [], allowComments: true },
          })
        ).status,
      ).toBe(200)
      const res = await w.bob.post(onView(copy.body.id, w.ids.p5), { text: `on a copy (${allowComments})` })
      expect(res.status, JSON.stringify(res.body)).toBe(allowComments ? 201 : 403)
      if (!allowComments) expect(res.body.code).toBe('COMMENTS_DISABLED')
    }
  })

  it('lets only the author edit, and the author or a manager delete', async () => {
    const bobs = await w.bob.post(onView(commenting, w.ids.p5), { text: 'edit me' })
    const path = (viewId: number) => `${onView(viewId, w.ids.p5)}/${bobs.body.id}`
    const byOwner = await w.alice.patch(`${onPanel(w.ids.p5)}/${bobs.body.id}`, { text: 'owner edit' })
    expect(byOwner.status).toBe(403)
    expect(byOwner.body.code).toBe('FORBIDDEN')
    expect((await carol.patch(path(commenting), { text: 'carol edit' })).status).toBe(403)
    expect((await root.patch(`${onPanel(w.ids.p5)}/${bobs.body.id}`, { text: 'admin edit' })).status).toBe(403)
    const edited = await w.bob.patch(path(commenting), { text: 'edited by bob' })
    expect(edited.status).toBe(200)
    expect(edited.body.text).toBe('edited by bob')
    // carol reads without manage: no; with manage (another view): yes.
    expect((await carol.delete(path(commenting))).status).toBe(403)
    expect((await carol.delete(path(managing))).status).toBe(204)
    // The author deletes their own; the panel's owner anyone's.
    const again = await w.bob.post(onView(commenting, w.ids.p5), { text: 'mine to delete' })
    expect((await w.bob.delete(`${onView(commenting, w.ids.p5)}/${again.body.id}`)).status).toBe(204)
    const third = await w.bob.post(onView(commenting, w.ids.p5), { text: 'the owner deletes this' })
    expect((await w.alice.delete(`${onPanel(w.ids.p5)}/${third.body.id}`)).status).toBe(204)
  })

  it('turns comments off everywhere with the panel’s enableComments: false (403 COMMENTS_DISABLED)', async () => {
    const settings = (enableComments: boolean) =>
      w.alice.put(`/api/panels/${w.panelId}`, { metadata: { settings: { enableComments } } })
    expect((await settings(false)).status).toBe(200)
    try {
      for (const [client, path] of [
        [w.alice, onPanel(w.ids.p5)],
        [root, onPanel(w.ids.p5)],
        [w.bob, onView(commenting, w.ids.p5)],
      ] as const) {
        const get = await client.get(path)
        expect(get.status).toBe(403)
        expect(get.body.code).toBe('COMMENTS_DISABLED')
        const post = await client.post(path, { text: 'off?' })
        expect(post.status).toBe(403)
        expect(post.body.code).toBe('COMMENTS_DISABLED')
      }
    } finally {
      expect((await settings(true)).status).toBe(200)
    }
    expect((await w.bob.post(onView(commenting, w.ids.p5), { text: 'on again' })).status).toBe(201)
  })
})

describe('mentions', () => {
  it('reads @userId tokens: once each, trailing dots dropped, not inside an address', () => {
    expect(mentionedUsers('Ask @carol. Also @carol, @user-456 and @j.doe_2; not bob@example.com, nor @@x or a lone @')).toEqual([
      'carol',
      'user-456',
      'j.doe_2',
    ])
    expect(mentionedUsers('(@alice)\n@bob!')).toEqual(['alice', 'bob'])
  })

  it('notifies a mentioned reader once per comment, never the author, nobody who cannot read the row', async () => {
    const commenting = await view('Mentions', { permissions: ['read'], userGroups: [], allowComments: true })
    const comment = await w.bob.post(onView(commenting, w.ids.p6), {
      text: 'Ask @carol. Then @carol again, and @alice; not bob@example.com, not me (@bob)',
    })
    expect(comment.status).toBe(201)
    const id = comment.body.id as number
    const carols = await mentionsOf(carol, id)
    expect(carols).toHaveLength(1)
    expect(carols[0]).toMatchObject({
      type: 'mention',
      impact: 'info',
      userId: 'carol',
      viewId: commenting,
      view: { id: commenting, name: 'Mentions', panelId: w.panelId },
      comment: { id, rowId: w.ids.p6, panelId: w.panelId },
      isRead: false,
    })
    expect((carols[0] as unknown as { message: string }).message).toContain('bob mentioned you')
    expect(await mentionsOf(w.alice, id)).toHaveLength(1)
    expect(await mentionsOf(w.bob, id)).toHaveLength(0)

    // An edit notifies whoever it newly names, and nobody twice.
    expect((await w.bob.patch(`${onView(commenting, w.ids.p6)}/${id}`, { text: '@carol @dave please' })).status).toBe(200)
    expect((await w.bob.patch(`${onView(commenting, w.ids.p6)}/${id}`, { text: '@carol @dave please!' })).status).toBe(200)
    expect(await mentionsOf(dave, id)).toHaveLength(1)
    expect(await mentionsOf(carol, id)).toHaveLength(1)
    expect(await mentionsOf(w.alice, id)).toHaveLength(1)
  })

  it('on the panel’s rows only its owner can be told; behind groups or @me filters only those the view shows the row to', async () => {
    const onPanelPath = await root.post(onPanel(w.ids.p6), { text: '@alice and @bob, see this' })
    expect(onPanelPath.status).toBe(201)
    expect(await mentionsOf(w.alice, onPanelPath.body.id)).toMatchObject([{ viewId: 0, view: null }])
    expect(await mentionsOf(w.bob, onPanelPath.body.id)).toHaveLength(0)

    // Groups are not known for a mentioned user: a view naming groups notifies only the owner.
    const nurses = await view('Nurses', { permissions: ['read'], userGroups: ['nurses'], allowComments: true })
    const nina = clientFor(w.t.app, 'tenant-a', 'nina', { groups: ['nurses'] })
    const inGroup = await nina.post(onView(nurses, w.ids.p6), { text: '@carol @alice' })
    expect(inGroup.status).toBe(201)
    expect(await mentionsOf(carol, inGroup.body.id)).toHaveLength(0)
    expect(await mentionsOf(w.alice, inGroup.body.id)).toHaveLength(1)

    // A view of each reader's own rows: the row is bob's, so carol does not see it there.
    const mine = await view(
      'My rows',
      { permissions: ['read'], userGroups: [], allowComments: true },
      { filters: [{ columnTitle: '_assignee', operator: 'equals', value: '@me' }] },
    )
    expect((await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p4}/work`, { assignee: 'bob' })).status).toBe(200)
    expect((await carol.get(onView(mine, w.ids.p4))).status).toBe(404)
    const bobs = await w.bob.post(onView(mine, w.ids.p4), { text: '@carol can you take it?' })
    expect(bobs.status, JSON.stringify(bobs.body)).toBe(201)
    expect(await mentionsOf(carol, bobs.body.id)).toHaveLength(0)
    // Once it is hers, she reads it there (and a mention through that view would reach her).
    expect((await w.alice.patch(`/api/panels/${w.panelId}/rows/${w.ids.p4}/work`, { assignee: 'carol' })).status).toBe(200)
    expect((await carol.get(onView(mine, w.ids.p4))).status).toBe(200)
  })
})

describe('what else sees a comment', () => {
  it('moves views that show or filter on _commentCount, appends row.commented, leaves the version alone', async () => {
    const showing = await view('Counts', null, { config: { columns: ['Name', '_commentCount'] } })
    const filtering = await view('Commented', null, {
      filters: [{ columnTitle: '_commentCount', operator: 'greaterThan', value: 0 }],
    })
    const rowId = w.ids.p1
    const before = await work(w.alice, rowId)
    const seq = await lastSeq()
    const created = await carolOnPanel(rowId, 'Needs a call back')
    const events = await eventsSince(seq)
    expect(events.find((e) => e.type === 'row.commented')).toEqual({
      type: 'row.commented',
      panelId: w.panelId,
      viewId: null,
      data: { rowId, key: 'p1', panelId: w.panelId, commentId: created.id, authorId: 'root', text: 'Needs a call back' },
    })
    const updated = events.find((e) => e.type === 'row.updated' && e.viewId === showing)
    expect(updated?.data).toMatchObject({ rowId, row: { Name: 'Ada', _commentCount: 1 }, previous: { _commentCount: 0 } })
    expect(events.find((e) => e.type === 'row.entered' && e.viewId === filtering)?.data).toMatchObject({ rowId })
    expect(events.some((e) => e.type === 'row.work_updated')).toBe(false)
    const rows = await w.alice.get(`/api/views/${showing}/rows?limit=100`)
    expect(rows.body.data.find((r: { _id: number }) => r._id === rowId)).toEqual({
      _id: rowId,
      _key: 'p1',
      _source: w.sourceId,
      Name: 'Ada',
      _commentCount: 1,
    })
    const after = await work(w.alice, rowId)
    expect(after.work).toMatchObject({ version: before.work.version, commentCount: before.work.commentCount + 1 })
    expect(after.etag).toBe(before.etag)

    const seq2 = await lastSeq()
    expect((await w.alice.delete(`${onPanel(rowId)}/${created.id}`)).status).toBe(204)
    const gone = await eventsSince(seq2)
    expect(gone.find((e) => e.type === 'row.updated' && e.viewId === showing)?.data).toMatchObject({
      row: { _commentCount: 0 },
      previous: { _commentCount: 1 },
    })
    expect(gone.find((e) => e.type === 'row.left' && e.viewId === filtering)?.data).toMatchObject({ rowId })
    expect(gone.some((e) => e.type === 'row.commented')).toBe(false)
  })

  it('never exports comments', async () => {
    const marker = 'UNIQUE-COMMENT-MARKER-7431'
    await carolOnPanel(w.ids.p2, marker)
    const exported = await w.alice.get(`/api/views/${await view('Export', null)}/export?format=csv`)
    expect(exported.status).toBe(200)
    expect(String(exported.body)).toContain('Ada')
    expect(String(exported.body)).not.toContain(marker)
  })

  it('goes with a deleted panel: its comments answer 404, a mention of them no longer names the comment', async () => {
    const other = await otherPanel()
    const comment = await root.post(onPanel(other.ids.p1, other.panelId), { text: 'for @alice' })
    expect(comment.status).toBe(201)
    expect(await mentionsOf(w.alice, comment.body.id)).toHaveLength(1)
    expect((await w.alice.delete(`/api/panels/${other.panelId}`)).status).toBe(204)
    expect((await w.alice.get(onPanel(other.ids.p1, other.panelId))).status).toBe(404)
    expect((await root.post(onPanel(other.ids.p1, other.panelId), { text: 'late' })).status).toBe(404)
    const all = await w.alice.get('/api/notifications/views?limit=100')
    const mention = all.body.notifications.find(
      (n: { type: string; message: string }) => n.type === 'mention' && n.message.includes('"Second"'),
    )
    expect(mention).toMatchObject({ comment: null, view: null })
  })
})

describe.skipIf(onTarget(['workers', 'deno'], SKIP.freshConnections))('a deleted data source', () => {
  it('takes its rows’ work state and comments, without foreign keys', async () => {
    const t = await makeTestApp({ database: 'fresh-connection' })
    try {
      expect(Number((await t.client.execute('PRAGMA foreign_keys')).rows[0][0])).toBe(0)
      const alice = clientFor(t.app, 'tenant-a', 'alice')
      const panel = await alice.post('/api/panels', { name: 'Gone', tenantId: 'tenant-a', userId: 'alice' })
      const source = await alice.post(`/api/panels/${panel.body.id}/datasources`, {
        type: 'api',
        config: { apiEndpoint: `${w.server.url}/patients`, keyField: 'id' },
      })
      expect(source.status, JSON.stringify(source.body)).toBe(201)
      const ids = await t.client.execute({ sql: 'SELECT row_id FROM records WHERE panel_id = ?', args: [panel.body.id] })
      const rowId = Number(ids.rows[0].row_id)
      expect(
        (await alice.post(`/api/panels/${panel.body.id}/rows/${rowId}/comments`, { text: 'kept until deleted' })).status,
      ).toBe(201)
      expect((await alice.post(`/api/panels/${panel.body.id}/rows/${rowId}/claim`, {})).status).toBe(200)
      const count = async (table: string) =>
        Number(
          (await t.client.execute({ sql: `SELECT count(*) AS n FROM ${table} WHERE panel_id = ?`, args: [panel.body.id] }))
            .rows[0].n,
        )
      expect([await count('row_identities'), await count('row_comments')]).toEqual([ids.rows.length, 1])
      expect((await alice.delete(`/api/datasources/${source.body.id}`)).status).toBe(204)
      expect([await count('row_identities'), await count('row_comments')]).toEqual([0, 0])
    } finally {
      t.client.close()
    }
  })
})

// --- Helpers ---

/** A comment by the tenant admin on a row of the world's panel. */
async function carolOnPanel(rowId: number, text: string): Promise<{ id: number }> {
  const res = await root.post(onPanel(rowId), { text })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

/** Another panel of alice's ("Second") on the same patients, with its row ids by patient id. */
async function otherPanel(): Promise<{ panelId: number; ids: Record<string, number> }> {
  const panel = await w.alice.post('/api/panels', { name: 'Second', tenantId: 'tenant-a', userId: 'alice' })
  const panelId = panel.body.id as number
  const source = await w.alice.post(`/api/panels/${panelId}/datasources`, {
    type: 'api',
    config: { apiEndpoint: `${w.server.url}/patients`, keyField: 'id' },
  })
  expect(source.status, JSON.stringify(source.body)).toBe(201)
  const rows = await w.t.client.execute({ sql: 'SELECT row_id AS id, key FROM records WHERE panel_id = ?', args: [panelId] })
  return { panelId, ids: Object.fromEntries(rows.rows.map((r) => [String(r.key), Number(r.id)])) }
}
