import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { makeTestApp, type TestApp } from '../helpers/app.ts'
import { clientFor, type TestClient } from '../helpers/http.ts'
import { type PgServer, startPasswordGate, startPgServer } from '../helpers/pg-server.ts'
import { onTarget, REMOTE, SKIP, TARGET } from '../helpers/target.ts'
import { createPanel, createSource, currentRecords, runsOf } from '../modules/datasources/fixtures.ts'

let pg: PgServer
let filesDir: string
let t: TestApp
let alice: TestClient
let panelId: number

beforeAll(async () => {
  pg = await startPgServer(`
    CREATE TABLE encounters (id int PRIMARY KEY, patient text NOT NULL, status text, updated_at timestamptz NOT NULL);
    INSERT INTO encounters SELECT g, 'Patient/' || (g % 4), 'finished', TIMESTAMPTZ '2026-01-01 08:00+00' + g * INTERVAL '1 hour'
    FROM generate_series(1, 6) g;`)
  filesDir = await mkdtemp(join(tmpdir(), 'db-sync-'))
}, 60_000)
afterAll(async () => {
  await pg?.close()
  await rm(filesDir, { recursive: true, force: true })
})
beforeEach(async () => {
  t = await makeTestApp({ filesDir })
  alice = clientFor(t.app, 'tenant-a', 'alice')
  panelId = (await createPanel(alice)).id
})

const sync = (id: number) => alice.post(`/api/datasources/${id}/sync`)

describe('database sources through the API', () => {
  it('refuses a query that writes or holds several statements, and a file outside the files folder (400)', async () => {
    for (const query of [
      'INSERT INTO encounters VALUES (9)',
      "UPDATE encounters SET status = 'x'",
      'SELECT 1; DROP TABLE encounters',
    ]) {
      const res = await createSource(alice, panelId, { connectionString: pg.url(), query }, 'database')
      expect(res.status).toBe(400)
      expect(res.body.details[0].path).toBe('config.query')
    }
    const outside = await createSource(alice, panelId, { connectionString: 'file:../../etc/x.db', table: 't' }, 'database')
    expect(outside.status).toBe(400)
    expect(outside.body.details).toEqual([
      { path: 'config.connectionString', message: "file path must not contain '..' segments" },
    ])
    expect((await pg.db.query('SELECT count(*)::int AS n FROM encounters')).rows).toEqual([{ n: 6 }])
  })

  it('syncs incrementally across two syncs, answering the cursor as lastSyncValue', async () => {
    const created = await createSource(
      alice,
      panelId,
      { connectionString: pg.url(), table: 'encounters', incrementalColumn: 'updated_at', batchSize: 4 },
      'database',
    )
    expect(created.body).toMatchObject({ syncStatus: 'success' })
    expect(created.body.config.lastSyncValue).toBe('2026-01-01 14:00:00+00')
    expect(created.body.config.connectionString).toBe(pg.url().replace(':pw@', ':<SECRET>@'))
    expect((await currentRecords(t, created.body.id)).map((r) => r.key)).toEqual(['1', '2', '3', '4', '5', '6'])
    await pg.db.exec(`
      UPDATE encounters SET status = 'cancelled', updated_at = TIMESTAMPTZ '2026-01-02 09:00+00' WHERE id = 2;
      INSERT INTO encounters VALUES (7, 'Patient/3', 'planned', TIMESTAMPTZ '2026-01-02 10:00+00');`)
    const second = await sync(created.body.id)
    expect(second.body).toMatchObject({ syncStatus: 'success', recordsProcessed: 2 })
    expect(second.body.config.lastSyncValue).toBe('2026-01-02 10:00:00+00')
    const records = await currentRecords(t, created.body.id)
    expect(records).toHaveLength(7)
    expect(records.find((r) => r.key === '2')?.data).toMatchObject({ status: 'cancelled' })
    expect((await runsOf(t, created.body.id)).at(-1)).toMatchObject({ rowsRead: 2, rowsWritten: 2 })
  })

  it.runIf(TARGET === 'workers')(
    'fails the sync of a SQLite source on Workers, naming the runtime, storing nothing',
    async () => {
      await writeFile(join(filesDir, 'none.sqlite'), '')
      const res = await createSource(alice, panelId, { connectionString: 'file:none.sqlite', table: 'items' }, 'database')
      expect(res.status).toBe(201)
      expect(res.body).toMatchObject({
        syncStatus: 'error',
        errorMessage: 'SQLite and libSQL databases cannot be read on the workers runtime (no driver)',
      })
      expect(await currentRecords(t, res.body.id)).toEqual([])
    },
  )

  it.skipIf(onTarget('workers', SKIP.noSqlite))(
    'keeps the cursor of the last committed batch when a later batch fails',
    async () => {
      const file = join(filesDir, 'items.sqlite')
      const writer = createClient({ url: `file:${file}` })
      await writer.executeMultiple(`
      DROP TABLE IF EXISTS items;
      CREATE TABLE items (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, payload TEXT);
      CREATE INDEX items_seq ON items (seq);
      INSERT INTO items VALUES (1, 1, '{"n":"a"}'), (2, 2, '{"n":"b"}'), (3, 3, '{"n":"c"}'), (4, 4, '{"n":"d"}'),
                               (5, 5, 'not json'), (6, 6, '{"n":"f"}');`)
      const config = {
        connectionString: 'file:items.sqlite',
        query: "SELECT id, seq, json_extract(payload, '$.n') AS n FROM items",
        incrementalColumn: 'seq',
        keyField: 'id',
        batchSize: 2,
      }
      const failed = await createSource(alice, panelId, config, 'database')
      expect(failed.body).toMatchObject({ syncStatus: 'error' })
      expect(failed.body.errorMessage).toMatch(/^Reading SQLite file items\.sqlite failed: .*malformed JSON/)
      // Batches [1] and [2, 3] committed (4 waits for the rest of its value); the cursor is theirs.
      expect(failed.body.config.lastSyncValue).toBe(3)
      expect((await currentRecords(t, failed.body.id)).map((r) => r.key)).toEqual(['1', '2', '3'])
      await writer.execute(`UPDATE items SET payload = '{"n":"e"}' WHERE id = 5`)
      writer.close()
      const retried = await sync(failed.body.id)
      expect(retried.body).toMatchObject({ syncStatus: 'success', recordsProcessed: 3 })
      expect(retried.body.config.lastSyncValue).toBe(6)
      expect((await currentRecords(t, failed.body.id)).map((r) => r.data.n)).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
    },
  )

  it('words a wrong password clearly, never answering or logging it', async () => {
    const gate = await startPasswordGate(pg.port, 'correct-staple')
    try {
      const connectionString = `postgres://reader:Tr0ub4dor%263@127.0.0.1:${gate.port}/postgres`
      const res = await createSource(alice, panelId, { connectionString, table: 'encounters' }, 'database')
      expect(res.status).toBe(201)
      expect(res.body).toMatchObject({
        syncStatus: 'error',
        errorMessage: 'PostgreSQL at 127.0.0.1 refused the password for user "reader" (authentication failed)',
      })
      expect(res.body.config.connectionString).toBe(`postgres://reader:<SECRET>@127.0.0.1:${gate.port}/postgres`)
      // The log lines are read where they are captured: in this process, not a remote server's.
      const logs = REMOTE ? [] : t.logs
      const everything = JSON.stringify([res.body, logs, await runsOf(t, res.body.id)])
      expect(everything).not.toContain('Tr0ub4dor')
      const raw = await t.client.execute({ sql: 'SELECT config FROM data_sources WHERE id = ?', args: [res.body.id] })
      expect(String(raw.rows[0].config)).not.toContain('Tr0ub4dor')
    } finally {
      await gate.close()
    }
  })

  it('refuses a loopback PostgreSQL host when private networks are not allowed', async () => {
    const strict = await makeTestApp({ env: { ALLOW_PRIVATE_NETWORK_SOURCES: 'false' } })
    const bob = clientFor(strict.app, 'tenant-b', 'bob')
    const res = await createSource(
      bob,
      (await createPanel(bob)).id,
      { connectionString: pg.url(), table: 'encounters' },
      'database',
    )
    expect(res.body.syncStatus).toBe('error')
    expect(res.body.errorMessage).toMatch(/^Refusing to connect to database host 127\.0\.0\.1: it is a loopback address/)
  })
})
