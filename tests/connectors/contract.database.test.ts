import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { afterAll, beforeAll } from 'vitest'
import database from '../../src/connectors/database.ts'
import { nodeSqliteOpener } from '../../src/runtime/node-sqlite.ts'
import { type PgServer, startPasswordGate, startPgServer } from '../helpers/pg-server.ts'
import { closedPort, hangingSqlite, startSilentServer } from '../helpers/stalled-sources.ts'
import { failing, type ReadSetup, readWith, testConnector } from './contract.ts'

const ROWS = 30
let root: string
let pg: PgServer
let gate: Awaited<ReturnType<typeof startPasswordGate>>
let silent: Awaited<ReturnType<typeof startSilentServer>>

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'contract-db-'))
  const sqlite = createClient({ url: `file:${join(root, 'items.sqlite')}` })
  await sqlite.executeMultiple(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS})
    INSERT INTO items SELECT i, 'name ' || i FROM n;`)
  sqlite.close()
  pg = await startPgServer(`CREATE TABLE items (id int PRIMARY KEY, name text);
    INSERT INTO items SELECT g, 'name ' || g FROM generate_series(1, ${ROWS}) g;`)
  gate = await startPasswordGate(pg.port, 'the-right-one')
  silent = await startSilentServer()
}, 60_000)

afterAll(async () => {
  await Promise.all([silent?.close(), gate?.close()])
  await pg?.close()
  await rm(root, { recursive: true, force: true })
})

const databaseConfig = {
  bad: {
    config: { connectionString: 'mysql://db.test/x', query: 'DELETE FROM items', batchSize: 0, sslMode: 'sometimes' },
    fields: ['connectionString', 'query', 'batchSize', 'sslMode'],
  },
  missing: { config: {}, fields: ['connectionString', 'table'] },
}
const databaseLimits = (source: () => ReadSetup) => ({
  source,
  count: ROWS,
  maxRecords: 'sync' as const,
  maxBytes: {
    notApplicable:
      'the driver hands rows, not bytes: a database read is bounded by records and time (docs/connectors-database-webhook.md)',
  },
  cap: { notApplicable: 'a database source has no user cap (batchSize sizes batches, it does not cut the read)' },
})

const postgresSource = () => ({ config: { connectionString: pg.url(), table: 'items', batchSize: 10 } })
testConnector({
  name: 'database (PostgreSQL)',
  connector: database,
  config: databaseConfig,
  records: readWith(database, postgresSource),
  keys: 'own',
  signal: { hanging: () => ({ config: { connectionString: `postgres://u:p@127.0.0.1:${silent.port}/x`, table: 'items' } }) },
  limits: databaseLimits(postgresSource),
  failures: () => {
    const password = 'pg-Zq8/recognisable@pass'
    const url = (port: number, user = 'reader') => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`
    return [
      {
        what: 'a wrong password in the connection string',
        run: failing(database, { connectionString: url(gate.port), table: 'items' }),
        secrets: [password],
      },
      {
        what: 'a wrong password field',
        run: failing(database, {
          connectionString: `postgres://reader@127.0.0.1:${gate.port}/postgres`,
          password,
          table: 'items',
        }),
        secrets: [password],
      },
      {
        what: 'a server that refuses the connection',
        run: async () => failing(database, { connectionString: url(await closedPort()), table: 'items' })(),
        secrets: [password],
      },
      {
        what: 'a missing table',
        run: failing(database, { connectionString: pg.url('postgres', password), table: 'nowhere' }),
        secrets: [password],
      },
    ]
  },
})

const sqliteSource = () => ({
  config: { connectionString: 'file:items.sqlite', table: 'items', batchSize: 10 },
  context: { openSqlite: nodeSqliteOpener(root) },
})
testConnector({
  name: 'database (SQLite)',
  connector: database,
  config: databaseConfig,
  records: readWith(database, sqliteSource),
  keys: 'own',
  signal: {
    hanging: () => ({
      config: { connectionString: 'file:items.sqlite', table: 'items' },
      context: { openSqlite: hangingSqlite(nodeSqliteOpener(root)) },
    }),
  },
  limits: databaseLimits(sqliteSource),
  failures: () => {
    const authToken = 'libsql-Zq8+recognisable/token'
    const openSqlite = nodeSqliteOpener(root)
    return [
      {
        what: 'an unreachable libSQL server with a token in the URL',
        run: async () =>
          failing(
            database,
            {
              connectionString: `libsql://127.0.0.1:${await closedPort()}?authToken=${encodeURIComponent(authToken)}`,
              table: 'items',
            },
            { openSqlite },
          )(),
        secrets: [authToken],
      },
      {
        what: 'an unreachable libSQL server with an authToken field',
        run: async () =>
          failing(
            database,
            { connectionString: `libsql://127.0.0.1:${await closedPort()}`, authToken, table: 'items' },
            { openSqlite },
          )(),
        secrets: [authToken],
      },
      {
        what: 'a missing database file',
        run: failing(database, { connectionString: 'file:missing.sqlite', table: 'items' }, { openSqlite }),
        secrets: [],
        paths: [root, tmpdir()],
      },
      {
        what: 'a missing table',
        run: failing(database, { connectionString: 'file:items.sqlite', table: 'nowhere' }, { openSqlite }),
        secrets: [],
        paths: [root, tmpdir()],
      },
    ]
  },
})
