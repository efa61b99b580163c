import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { onTarget, SKIP } from '../helpers/target.ts'
import { createPanel, createSource, currentRecords } from '../modules/datasources/fixtures.ts'

let root: string
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'file-api-'))
  await writeFile(join(root, 'patients.csv'), 'id,name,age\np1,Ada,36\np2,Grace,45\np3,Alan,41\n')
  await writeFile(join(root, 'broken.csv'), 'id,name\np1,Ada\np2,"Grace\n')
  await writeFile(join(root, 'patients.ndjson'), '{"id":"p1"}\n{"id":"p2"}\n')
})
afterAll(() => rm(root, { recursive: true, force: true }))

describe('POST /api/panels/{panelId}/datasources (file sources)', () => {
  beforeEach(async () => {
    t = await makeTestApp({ filesDir: root })
    alice = clientFor(t.app, 'tenant-a', 'alice')
    panelId = (await createPanel(alice)).id
  })

  it('creates a csv source and syncs the file before answering', async () => {
    const res = await createSource(alice, panelId, { filePath: 'patients.csv', keyField: 'id' }, 'csv')
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ type: 'csv', syncStatus: 'success', errorMessage: null })
    const runs = await alice.get(`/api/datasources/${res.body.id}/sync-runs`)
    expect(runs.body.syncRuns[0]).toMatchObject({ status: 'success', rowsRead: 3, rowsWritten: 3, truncated: false })
    expect(await currentRecords(t, res.body.id)).toEqual([
      { key: 'p1', data: { id: 'p1', name: 'Ada', age: '36' } },
      { key: 'p2', data: { id: 'p2', name: 'Grace', age: '45' } },
      { key: 'p3', data: { id: 'p3', name: 'Alan', age: '41' } },
    ])
  })

  it('creates a file source of format ndjson', async () => {
    const res = await createSource(alice, panelId, { filePath: 'patients.ndjson', format: 'ndjson' }, 'file')
    expect(res.body).toMatchObject({ syncStatus: 'success' })
    expect((await currentRecords(t, res.body.id)).map((r) => r.data)).toEqual([{ id: 'p1' }, { id: 'p2' }])
  })

  it('reports a maxRows cut in the sync answer and the sync run', async () => {
    const created = await createSource(alice, panelId, { filePath: 'patients.csv', maxRows: 2 }, 'csv')
    expect(created.body.syncStatus).toBe('success')
    const sync = await alice.post(`/api/datasources/${created.body.id}/sync`, {})
    expect(sync.status).toBe(200)
    expect(sync.body.message).toMatch(/maxRows/)
    const runs = await alice.get(`/api/datasources/${created.body.id}/sync-runs`)
    expect(runs.body.syncRuns[0]).toMatchObject({ status: 'success', rowsWritten: 2, truncated: true })
  })

  it('answers 400 naming the field for a path escape, a bad encoding, an extension or a format conflict', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ filePath: '../outside.csv' }, 'csv', 'config.filePath'],
      [{ filePath: '/etc/passwd', format: 'csv' }, 'file', 'config.filePath'],
      [{ filePath: 'exports:patients.csv' }, 'csv', 'config.filePath'],
      [{ filePath: 'patients.csv?v=2' }, 'csv', 'config.filePath'],
      [{ filePath: './patients.csv' }, 'csv', 'config.filePath'],
      [{ filePath: 'patients.csv', encoding: 'no-such-charset' }, 'csv', 'config.encoding'],
      [{ filePath: 'patients.csv', allowedExtensions: ['xlsx'] }, 'csv', 'config.filePath'],
      [{ filePath: 'patients.csv', format: 'xml' }, 'csv', 'config.format'],
      [{ filePath: 'patients.csv' }, 'file', 'config.format'],
    ]
    for (const [config, type, path] of cases) {
      const res = await createSource(alice, panelId, config, type)
      expect(res.status, JSON.stringify(config)).toBe(400)
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path)
    }
  })

  it('keeps the source with syncStatus error and a message saying why for a malformed file', async () => {
    const res = await createSource(alice, panelId, { filePath: 'broken.csv' }, 'csv')
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      syncStatus: 'error',
      errorMessage: 'Malformed CSV: a quoted field opened on line 3 is never closed',
    })
    expect(await currentRecords(t, res.body.id)).toEqual([])
  })

  it('fails the sync for a file that does not exist or exceeds maxFileSize', async () => {
    const missing = await createSource(alice, panelId, { filePath: 'nope.csv' }, 'csv')
    expect(missing.body).toMatchObject({
      syncStatus: 'error',
      errorMessage: "File 'nope.csv' does not exist in the files folder",
    })
    const big = await createSource(alice, panelId, { filePath: 'patients.csv', maxFileSize: 5 }, 'csv')
    expect(big.body.errorMessage).toMatch(/more than its maxFileSize of 5 bytes/)
  })
})

describe.skipIf(onTarget(['workers', 'deno'], SKIP.bareNode))('file sources on a runtime without a file system', () => {
  it('answers 400 at create with a message naming the runtime, and stores nothing', async () => {
    const bare = await makeTestApp()
    const bob = clientFor(bare.app, 'tenant-b', 'bob')
    const panel = await createPanel(bob)
    const res = await createSource(bob, panel.id, { filePath: 'patients.csv' }, 'csv')
    expect(res.status).toBe(400)
    expect(res.body.message).toBe("'csv' sources need file storage, which the node runtime was not given")
    expect(res.body.details).toEqual([
      {
        path: 'type',
        message: expect.stringMatching(/needs file storage, which the node runtime was not given: give buildDeps/),
      },
    ])
    expect((await bob.get(`/api/panels/${panel.id}/datasources`)).body).toEqual([])
  })
})
