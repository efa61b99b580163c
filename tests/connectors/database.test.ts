import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import database from '../../src/connectors/database.ts'
import { DatabaseConfig } from '../../src/connectors/database-config.ts'
import { readOnlyQueryProblem } from '../../src/lib/sql.ts'
import { nodeSqliteOpener } from '../../src/runtime/node-sqlite.ts'
import { readAllBatches } from '../helpers/connectors.ts'
import { type PgServer, startPasswordGate, startPgServer } from '../helpers/pg-server.ts'

const PATIENTS_SQL = `
  CREATE SCHEMA clinic;
  CREATE TABLE clinic.patients (
    id serial PRIMARY KEY, mrn text NOT NULL UNIQUE, family text, given text, birth_date date,
    active boolean DEFAULT true, weight_kg numeric(5,1), updated_at timestamptz NOT NULL
  );
  INSERT INTO clinic.patients (mrn, family, given, birth_date, weight_kg, updated_at)
  SELECT 'MRN-' || lpad(g::text, 4, '0'), 'Family' || g, 'Given' || g, DATE '1950-01-01' + g * 100, 50 + g / 2.0,
         TIMESTAMPTZ '2026-01-01 00:00:00+00' + (g / 3) * INTERVAL '1 minute' + INTERVAL '0.123456 second'
  FROM generate_series(1, 25) g;
  CREATE TABLE public.notes (body text);
  INSERT INTO public.notes VALUES ('a'), ('b');`

let pg: PgServer
let filesDir: string
const openSqlite = () => nodeSqliteOpener(filesDir)

beforeAll(async () => {
  pg = await startPgServer(PATIENTS_SQL)
  filesDir = await mkdtemp(join(tmpdir(), 'db-connector-'))
  const client = createClient({ url: `file:${join(filesDir, 'clinic.sqlite')}` })
  await client.executeMultiple(`
    CREATE TABLE visits (id INTEGER PRIMARY KEY, patient TEXT, seq INTEGER, note TEXT, big INTEGER);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 23)
    INSERT INTO visits SELECT i, 'p' || (i % 5), i / 4, 'visit ' || i, 9007199254740993 FROM n;`)
  client.close()
}, 60_000)
afterAll(async () => {
  await pg?.close()
  await rm(filesDir, { recursive: true, force: true })
})

describe('database connector: PostgreSQL', () => {
  it('reads a table with its schema in batches, keyed by the primary key', async () => {
    const { batches, records } = await readAllBatches(database, {
      connectionString: pg.url(),
      schema: 'clinic',
      table: 'patients',
      batchSize: 10,
    })
    expect(batches.map((b) => b.length)).toEqual([10, 10, 5])
    expect(records[0].key).toBe('1')
    expect(records[0].data).toMatchObject({ id: 1, mrn: 'MRN-0001', family: 'Family1', birth_date: '1950-04-11', active: true })
    expect(records[0].data.weight_kg).toBe('50.5')
    expect(new Set(records.map((r) => r.key)).size).toBe(25)
  })

  it('reads one read-only query (no primary key: keys come from keyField or content)', async () => {
    const { records } = await readAllBatches(database, {
      connectionString: pg.url(),
      query: "SELECT mrn, given || ' ' || family AS name FROM clinic.patients WHERE id <= 3 ORDER BY id;",
    })
    expect(records).toEqual([
      { key: undefined, data: { mrn: 'MRN-0001', name: 'Given1 Family1' } },
      { key: undefined, data: { mrn: 'MRN-0002', name: 'Given2 Family2' } },
      { key: undefined, data: { mrn: 'MRN-0003', name: 'Given3 Family3' } },
    ])
  })

  it('reads public by default and runs the query in a read-only transaction', async () => {
    const { records } = await readAllBatches(database, { connectionString: pg.url(), table: 'notes' })
    expect(records.map((r) => r.data.body)).toEqual(['a', 'b'])
    // A write hidden from the text check (a function call) is still refused by the transaction.
    await pg.db.exec(
      `CREATE OR REPLACE FUNCTION sneaky() RETURNS int LANGUAGE sql AS 'INSERT INTO public.notes VALUES (''x'') RETURNING 1'`,
    )
    await expect(readAllBatches(database, { connectionString: pg.url(), query: 'SELECT sneaky()' })).rejects.toThrow(
      /tried to write.*read-only/,
    )
    expect((await pg.db.query('SELECT count(*)::int AS n FROM public.notes')).rows).toEqual([{ n: 2 }])
  })

  it('reads incrementally past the cursor in column order, advancing at complete values only', async () => {
    const first = await readAllBatches(database, {
      connectionString: pg.url(),
      schema: 'clinic',
      table: 'patients',
      incrementalColumn: 'updated_at',
      batchSize: 4,
    })
    expect(first.records).toHaveLength(25)
    // Three rows share each minute: no batch ends inside a tie, so every cursor is complete.
    for (const [i, batch] of first.batches.entries()) {
      const last = batch.at(-1)!.data.updated_at as Date
      expect(first.report.cursors[i]).toBe(`${last.toISOString().slice(0, 19).replace('T', ' ')}.123456+00`)
    }
    const cursor = first.report.cursors.at(-1)
    expect(cursor).toBe('2026-01-01 00:08:00.123456+00')
    const again = await readAllBatches(
      database,
      { connectionString: pg.url(), schema: 'clinic', table: 'patients', incrementalColumn: 'updated_at' },
      { cursor },
    )
    expect(again.records).toEqual([])
  })

  it('refuses a loopback host when private networks are not allowed', async () => {
    await expect(
      readAllBatches(database, { connectionString: pg.url(), table: 'notes' }, { allowPrivateNetwork: false }),
    ).rejects.toThrow(/Refusing to connect to database host 127\.0\.0\.1: it is a loopback address/)
    await expect(
      readAllBatches(
        database,
        { connectionString: 'postgres://u:p@db.internal.test:5432/x', table: 't' },
        { allowPrivateNetwork: false, resolveHost: async () => ['10.1.2.3'] },
      ),
    ).rejects.toThrow(/db\.internal\.test \(10\.1\.2\.3\): it is a private address/)
  })

  it('words a wrong password without the password', async () => {
    const gate = await startPasswordGate(pg.port, 'right-horse')
    try {
      const config = { connectionString: `postgres://reader:wr%40ng-battery@127.0.0.1:${gate.port}/postgres`, table: 'notes' }
      const err = await readAllBatches(database, config).catch((e: Error) => e)
      expect(err).toBeInstanceOf(Error)
      expect((err as Error).message).toBe(
        'PostgreSQL at 127.0.0.1 refused the password for user "reader" (authentication failed)',
      )
      expect(JSON.stringify(err)).not.toContain('wr@ng')
      const ok = await readAllBatches(database, {
        connectionString: `postgres://reader@127.0.0.1:${gate.port}/postgres`,
        password: 'right-horse',
        table: 'notes',
      })
      expect(ok.records).toHaveLength(2)
    } finally {
      await gate.close()
    }
  })
})

describe('database connector: SQLite files', () => {
  it('reads a table in LIMIT/OFFSET batches with big integers as text', async () => {
    const { batches, records } = await readAllBatches(
      database,
      { connectionString: 'file:clinic.sqlite', table: 'visits', batchSize: 10 },
      { openSqlite: openSqlite() },
    )
    expect(batches.map((b) => b.length)).toEqual([10, 10, 3])
    expect(records[0]).toEqual({ key: '1', data: { id: 1, patient: 'p1', seq: 0, note: 'visit 1', big: '9007199254740993' } })
  })

  it('reads incrementally, never splitting a tie of the cursor column across the stored cursor', async () => {
    const config = { connectionString: 'file:clinic.sqlite', table: 'visits', incrementalColumn: 'seq', batchSize: 3 }
    const { batches, report } = await readAllBatches(database, config, { openSqlite: openSqlite() })
    expect(batches.flat().map((r) => r.data.id)).toEqual(Array.from({ length: 23 }, (_, i) => i + 1))
    for (const [i, batch] of batches.entries()) {
      const next = batches[i + 1]?.[0]
      if (next) expect(next.data.seq).not.toBe(batch.at(-1)!.data.seq)
      expect(report.cursors[i]).toBe(batch.at(-1)!.data.seq)
    }
    const rest = await readAllBatches(database, config, { openSqlite: openSqlite(), cursor: 4 })
    expect(rest.records.map((r) => r.data.id)).toEqual([20, 21, 22, 23])
  })

  it('refuses a private libSQL host when private networks are not allowed', async () => {
    await expect(
      readAllBatches(
        database,
        { connectionString: 'libsql://192.168.1.20:8080', table: 't' },
        { openSqlite: openSqlite(), allowPrivateNetwork: false },
      ),
    ).rejects.toThrow(/database host 192\.168\.1\.20: it is a private address/)
  })

  it('runs queries read-only and keeps file paths inside the files folder', async () => {
    const { records } = await readAllBatches(
      database,
      { connectionString: 'file:clinic.sqlite', query: 'SELECT patient, count(*) AS n FROM visits GROUP BY patient' },
      { openSqlite: openSqlite() },
    )
    expect(records).toHaveLength(5)
    const outside = await mkdtemp(join(tmpdir(), 'db-outside-'))
    await writeFile(join(outside, 'x.sqlite'), '')
    await symlink(join(outside, 'x.sqlite'), join(filesDir, 'link.sqlite'))
    await expect(
      readAllBatches(database, { connectionString: 'file:link.sqlite', table: 't' }, { openSqlite: openSqlite() }),
    ).rejects.toThrow("File path 'link.sqlite' leads outside the files folder")
    await rm(outside, { recursive: true, force: true })
  })
})

describe('database config', () => {
  it('refuses writes, several statements, both or neither of table and query, and path escapes', () => {
    const issues = (c: Record<string, unknown>) =>
      DatabaseConfig.safeParse(c).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? []
    expect(issues({ connectionString: 'file:../x.db', table: 't' })).toEqual([
      "connectionString: file path must not contain '..' segments",
    ])
    expect(issues({ connectionString: 'file:///etc/x.db', table: 't' })[0]).toMatch(/relative to the files folder/)
    expect(issues({ connectionString: 'mysql://x/y', table: 't' })[0]).toMatch(/must start with postgres/)
    expect(issues({ connectionString: 'file:a.db' })).toEqual(['table: give exactly one of table or query'])
    expect(issues({ connectionString: 'file:a.db', table: 't', query: 'SELECT 1' })).toEqual([
      'table: give exactly one of table or query',
    ])
  })

  it('accepts one SELECT and refuses anything that writes, outside literals and comments', () => {
    expect(readOnlyQueryProblem('SELECT \'drop; table\', "update" FROM t -- delete\n WHERE x = $$;insert$$;')).toBeUndefined()
    expect(readOnlyQueryProblem('WITH a AS (SELECT 1) SELECT * FROM a')).toBeUndefined()
    expect(readOnlyQueryProblem('SELECT 1; DROP TABLE t')).toMatch(/single statement/)
    expect(readOnlyQueryProblem('INSERT INTO t VALUES (1)')).toMatch(/must be a SELECT/)
    expect(readOnlyQueryProblem('WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d')).toMatch(/'DELETE' is not allowed/)
    expect(readOnlyQueryProblem('SELECT * INTO copy FROM t')).toMatch(/'INTO' is not allowed/)
    expect(readOnlyQueryProblem("SELECT 'unterminated")).toMatch(/unterminated/)
    expect(readOnlyQueryProblem("SELECT E'it\\'s'; UPDATE t SET a = 1")).toMatch(/single statement/)
  })
})
