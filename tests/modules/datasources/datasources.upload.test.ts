import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { changes, dataSources, syncRuns } from '../../../src/db/schema.ts'
import { makeTestApp, type TestApp } from '../../helpers/app.ts'
import { tokenFor } from '../../helpers/auth.ts'
import { clientFor, type TestClient } from '../../helpers/http.ts'
import { onTarget, SKIP } from '../../helpers/target.ts'
import { createPanel, createSource, currentRecords } from './fixtures.ts'

const roots: string[] = []
let root: string
let t: TestApp
let alice: TestClient
let panelId: number

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'upload-'))
  roots.push(root)
  t = await makeTestApp({ filesDir: root, env: { UPLOAD_MAX_BYTES: '2048' } })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})
afterAll(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true })
})

const CSV = 'id,name\np1,Ada\np2,Grace\n'

/** Regular files under the files root (folders a refused upload created do not count). */
const storedFiles = async () =>
  (await readdir(root, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name)

async function upload(
  id: number,
  body: BodyInit,
  options: { headers?: Record<string, string>; query?: string; tenant?: string; user?: string } = {},
) {
  const token = await tokenFor(options.tenant ?? 'tenant-a', options.user ?? 'alice')
  const res = await t.app.request(`/api/datasources/${id}/file${options.query ?? ''}`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${token}`, ...options.headers },
    body,
  })
  return { status: res.status, body: await res.json() }
}

/** A file source whose initial sync failed because its file is not there yet. */
async function emptySource(config: Record<string, unknown> = {}, type = 'csv') {
  const res = await createSource(alice, panelId, { filePath: 'pending.csv', ...config }, type)
  expect(res.status).toBe(201)
  return res.body.id as number
}

const form = (content: string, name: string, field = 'file') => {
  const data = new FormData()
  data.set(field, new File([content], name, { type: 'text/csv' }))
  return data
}

describe('PUT /api/datasources/{id}/file', () => {
  it('stores a raw body in the tenant upload folder, points filePath at it and syncs', async () => {
    const id = await emptySource({ keyField: 'id' })
    const res = await upload(id, CSV, { headers: { 'Content-Type': 'text/csv' }, query: '?filename=patients.csv' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ id, syncStatus: 'success', status: 'success', recordsProcessed: 2 })
    expect(res.body.config.filePath).toMatch(new RegExp(`^uploads/tenant-a-[0-9a-f]{16}/${id}/patients\\.csv$`))
    expect(await readFile(join(root, res.body.config.filePath), 'utf8')).toBe(CSV)
    expect((await currentRecords(t, id)).map((r) => r.key)).toEqual(['p1', 'p2'])
    const log = await t.deps.db
      .select()
      .from(changes)
      .where(and(eq(changes.entityType, 'DataSource'), eq(changes.entityId, id), eq(changes.action, 'UPDATE')))
    expect(log).toHaveLength(1)
    expect(log[0].changes).toMatchObject({ config: { newValue: { filePath: res.body.config.filePath } } })
  })

  it('takes the file field of a multipart body, and replaces the previous upload', async () => {
    const id = await emptySource()
    const first = await upload(id, form(CSV, 'first.csv'))
    expect(first.body).toMatchObject({ syncStatus: 'success', recordsProcessed: 2 })
    const second = await upload(id, form('id,name\np9,Alan\n', 'second.csv'))
    expect(second.status).toBe(200)
    expect(second.body.config.filePath).toMatch(/\/second\.csv$/)
    expect((await currentRecords(t, id)).map((r) => r.data)).toEqual([{ id: 'p9', name: 'Alan' }])
    const folder = join(root, second.body.config.filePath, '..')
    expect(await readdir(folder)).toEqual(['second.csv'])
  })

  it('names a raw upload without a name after the format, and uses a Content-Disposition name', async () => {
    const id = await emptySource({ format: 'ndjson' }, 'json')
    const res = await upload(id, '{"id":1}\n', { headers: { 'Content-Type': 'application/octet-stream' } })
    expect(res.body.config.filePath).toMatch(/\/data\.ndjson$/)
    const named = await upload(id, '{"id":2}\n', {
      headers: { 'Content-Disposition': 'attachment; filename="../../evil name.ndjson"' },
    })
    expect(named.body.config.filePath).toMatch(new RegExp(`/${id}/evil_name\\.ndjson$`))
  })

  it('answers 202 with the run when async=true', async () => {
    const id = await emptySource()
    const res = await upload(id, CSV, { query: '?async=true&filename=a.csv' })
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ dataSourceId: id, status: 'syncing', trigger: 'manual' })
  })

  it('answers 413 over UPLOAD_MAX_BYTES, raw or multipart, and keeps nothing', async () => {
    const id = await emptySource()
    const big = `id\n${'x'.repeat(3000)}\n`
    const raw = await upload(id, big, { query: '?filename=big.csv' })
    expect(raw.status).toBe(413)
    expect(raw.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: expect.stringMatching(/UPLOAD_MAX_BYTES/) })
    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big))
        c.close()
      },
    })
    const streamed = await t.app.request(`/api/datasources/${id}/file?filename=big.csv`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${await tokenFor('tenant-a', 'alice')}` },
      body: chunked,
      duplex: 'half',
    } as RequestInit)
    expect(streamed.status).toBe(413)
    expect((await upload(id, form(big, 'big.csv'))).status).toBe(413)
    expect(await storedFiles()).toEqual([])
  })

  it("answers 413 over the source's maxFileSize and 400 for an extension outside allowedExtensions", async () => {
    const id = await emptySource({ maxFileSize: 10, allowedExtensions: ['csv'] })
    const tooBig = await upload(id, CSV, { query: '?filename=a.csv' })
    expect(tooBig.status).toBe(413)
    expect(tooBig.body.message).toMatch(/maxFileSize of 10 bytes/)
    const wrongExt = await upload(id, 'a\n', { query: '?filename=a.txt' })
    expect(wrongExt.status).toBe(400)
    expect(wrongExt.body.details[0]).toMatchObject({
      path: 'file',
      message: expect.stringMatching(/'\.txt' is not in allowedExtensions/),
    })
  })

  it('answers 409 while a sync of the source runs, writing nothing', async () => {
    await writeFile(join(root, 'big.csv'), 'id,v\n1,one\n')
    const created = await createSource(alice, panelId, { filePath: 'big.csv' }, 'csv')
    const id = created.body.id as number
    // A sync holds the source (here or on another instance): its run, and the source's lease.
    const [run] = await t.deps.db
      .insert(syncRuns)
      .values({ tenantId: 'tenant-a', dataSourceId: id, status: 'syncing', trigger: 'manual', generation: 2, startedAt: 'x' })
      .returning()
    await t.deps.db
      .update(dataSources)
      .set({ syncStatus: 'syncing', leaseRunId: run.id, leaseExpiresAt: '2099-01-01T00:00:00.000Z' })
      .where(eq(dataSources.id, id))
    const res = await upload(id, CSV, { query: '?filename=a.csv' })
    expect(res.status).toBe(409)
    expect(res.body.details).toMatchObject({ id: run.id, status: 'syncing' })
    expect((await storedFiles()).sort()).toEqual(['big.csv'])
    const [source] = await t.deps.db.select().from(dataSources).where(eq(dataSources.id, id))
    expect(source.config).toEqual({ filePath: 'big.csv' })
  })

  it('stores a malformed file and answers the failed sync with its reason', async () => {
    const id = await emptySource()
    const res = await upload(id, 'id,name\np1,"Ada\n', { query: '?filename=bad.csv' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ syncStatus: 'error', errorMessage: expect.stringMatching(/^Malformed CSV/) })
  })

  it('answers 400 for a source that does not read files, and for a multipart body without a file field', async () => {
    const api = await createSource(alice, panelId, { apiEndpoint: 'http://127.0.0.1:9/none' }, 'api')
    const res = await upload(api.body.id, CSV, { query: '?filename=a.csv' })
    expect(res.status).toBe(400)
    expect(res.body.message).toMatch(/Only file data sources take an uploaded file/)
    const id = await emptySource()
    const noField = await upload(id, form(CSV, 'a.csv', 'document'))
    expect(noField.status).toBe(400)
    expect(noField.body.details[0].path).toBe('file')
  })

  it("answers 404 for another tenant's source and 401 without a token", async () => {
    const id = await emptySource()
    const other = await upload(id, CSV, { tenant: 'tenant-b', user: 'bob', query: '?filename=a.csv' })
    expect(other.status).toBe(404)
    const anonymous = await t.app.request(`/api/datasources/${id}/file`, { method: 'PUT', body: CSV })
    expect(anonymous.status).toBe(401)
    expect(await storedFiles()).toEqual([])
  })

  // The Deno server always has its files folder.
  it.skipIf(onTarget(['workers', 'deno'], SKIP.bareNode))('answers 400 on a runtime given no file storage', async () => {
    const bare = await makeTestApp()
    const bob = clientFor(bare.app, 'tenant-b', 'bob')
    const panel = await createPanel(bob)
    // Such a source cannot be created here (400 at create); it may exist from a runtime with files.
    const [source] = await bare.deps.db
      .insert(dataSources)
      .values({
        tenantId: 'tenant-b',
        userId: 'bob',
        panelId: panel.id,
        type: 'csv',
        config: { filePath: 'a.csv' },
        createdAt: 'x',
        updatedAt: 'x',
      })
      .returning()
    const res = await bare.app.request(`/api/datasources/${source.id}/file?filename=a.csv`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${await tokenFor('tenant-b', 'bob')}` },
      body: CSV,
    })
    expect(res.status).toBe(400)
    expect((await res.json()).message).toMatch(/^Uploading a file needs file storage, which the node runtime was not given/)
  })
})
