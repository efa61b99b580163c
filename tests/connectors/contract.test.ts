import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { afterAll, beforeAll } from 'vitest'
import api from '../../src/connectors/api.ts'
import database from '../../src/connectors/database.ts'
import fhir from '../../src/connectors/fhir.ts'
import file from '../../src/connectors/file.ts'
import type { Connector, ConnectorContext } from '../../src/connectors/types.ts'
import webhook from '../../src/connectors/webhook.ts'
import type { FileStore } from '../../src/lib/files.ts'
import type { OpenSqlite } from '../../src/lib/sql.ts'
import { nodeFileStore } from '../../src/runtime/node-files.ts'
import { nodeSqliteOpener } from '../../src/runtime/node-sqlite.ts'
import { startPagedApi } from '../helpers/api-server.ts'
import { readAllBatches } from '../helpers/connectors.ts'
import { startFhirServer } from '../helpers/fhir-server.ts'
import { type PgServer, startPasswordGate, startPgServer } from '../helpers/pg-server.ts'
import { type FixtureServer, sendJson, startJsonServer } from '../helpers/servers.ts'
import { type ReadSetup, testConnector } from './contract.ts'
import { webhookContract } from './contract.webhook.ts'

const ROWS = 30
let root: string
let outside: string
let files: FileStore
let apiFixture: Awaited<ReturnType<typeof startPagedApi>>
let fhirFixture: Awaited<ReturnType<typeof startFhirServer>>
let pg: PgServer
let gate: Awaited<ReturnType<typeof startPasswordGate>>
let misbehaving: FixtureServer
let silent: { port: number; close(): Promise<void> }

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'contract-files-'))
  outside = await mkdtemp(join(tmpdir(), 'contract-outside-'))
  files = nodeFileStore(root)
  const rows = Array.from({ length: ROWS }, (_, i) => `${i + 1},name ${i + 1}`)
  await writeFile(join(root, 'rows.csv'), `id,name\n${rows.join('\n')}\n`)
  await writeFile(join(root, 'broken.csv'), 'id,name\n1,"open\n')
  await mkdir(join(root, 'folder.csv'))
  await writeFile(join(outside, 'elsewhere.csv'), 'id\n1\n')
  await symlink(join(outside, 'elsewhere.csv'), join(root, 'escape.csv'))
  const sqlite = createClient({ url: `file:${join(root, 'items.sqlite')}` })
  await sqlite.executeMultiple(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS}) INSERT INTO items SELECT i, 'name ' || i FROM n;`)
  sqlite.close()
  apiFixture = await startPagedApi()
  fhirFixture = await startFhirServer()
  pg = await startPgServer(`CREATE TABLE items (id int PRIMARY KEY, name text);
    INSERT INTO items SELECT g, 'name ' || g FROM generate_series(1, ${ROWS}) g;`)
  gate = await startPasswordGate(pg.port, 'the-right-one')
  misbehaving = await startJsonServer((req, res) => {
    // /hang/…: never answered (closed with the server). /echo-auth/…: a 401 that quotes the credentials.
    if (req.url?.startsWith('/echo-auth')) {
      return sendJson(res, 401, {
        resourceType: 'OperationOutcome',
        issue: [{ severity: 'error', code: 'login', diagnostics: `credentials ${req.headers.authorization} refused` }],
      })
    }
  })
  silent = await startSilentServer()
}, 60_000)

afterAll(async () => {
  await Promise.all([apiFixture?.close(), fhirFixture?.close(), misbehaving?.close(), silent?.close(), gate?.close()])
  await pg?.close()
  await rm(root, { recursive: true, force: true })
  await rm(outside, { recursive: true, force: true })
})

/** A TCP server that accepts connections and never says a word (a database that hangs). */
async function startSilentServer() {
  const sockets = new Set<Socket>()
  const server = createServer((s) => {
    sockets.add(s)
    s.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A file store on a slow drive: the file grows one row every 50 ms and never ends. */
const slowFiles = (): FileStore => ({
  stat: async () => ({ size: 1_000_000 }),
  async read() {
    let row = 0
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        controller.enqueue(new TextEncoder().encode(row++ === 0 ? 'id,name\n' : `${row},slow\n`))
      },
    })
  },
  write: () => Promise.reject(new Error('read-only')),
  remove: () => Promise.reject(new Error('read-only')),
})

/** An SQLite opener whose queries never come back (a remote libSQL server that hangs). */
const hangingSqlite =
  (open: OpenSqlite): OpenSqlite =>
  async (target) => {
    const db = await open(target)
    return { query: () => new Promise(() => {}), close: () => db.close() }
  }

const closedPort = async () => {
  const server = await startSilentServer()
  await server.close()
  return server.port
}

const readWith = (connector: Connector, setup: () => ReadSetup) => async (now: () => Date) => {
  const { config, context } = setup()
  return (await readAllBatches(connector, config, { ...context, now })).records
}
const failing =
  (connector: Connector, config: Record<string, unknown>, context: Partial<ConnectorContext> = {}) =>
  () =>
    readAllBatches(connector, config, context)

const fileSource = () => ({ config: { filePath: 'rows.csv', format: 'csv' }, context: { files } })
testConnector({
  name: 'file',
  connector: file,
  config: {
    bad: {
      config: { filePath: '../up.csv', format: 'parquet', skipRows: -1, encoding: 'klingon' },
      fields: ['filePath', 'format', 'skipRows', 'encoding'],
    },
    missing: { config: {}, fields: ['filePath', 'format'] },
  },
  records: readWith(file, fileSource),
  keys: 'content',
  signal: { hanging: () => ({ config: { filePath: 'slow.csv', format: 'csv' }, context: { files: slowFiles() } }) },
  limits: {
    source: fileSource,
    count: ROWS,
    maxRecords: 'refuses',
    maxBytes: 'refuses',
    cap: { config: { maxRows: 10 }, field: 'maxRows', records: 10 },
  },
  // A file config holds no credentials: what must not show is where the files live.
  failures: () =>
    [
      ['a missing file', 'missing.csv'],
      ['a symlink leading outside the files folder', 'escape.csv'],
      ['a folder', 'folder.csv'],
      ['a malformed file', 'broken.csv'],
    ].map(([what, filePath]) => ({
      what,
      run: failing(file, { filePath, format: 'csv' }, { files }),
      secrets: [],
      paths: [root, outside, tmpdir()],
    })),
})

const apiSource = () => ({ config: { apiEndpoint: `${apiFixture.server.url}/offset`, paginationStyle: 'offset' } })
testConnector({
  name: 'api',
  connector: api,
  config: {
    bad: {
      config: { apiEndpoint: 'http://reader:pw@api.test/x', method: 'DELETE', pageSize: 0, authentication: { type: 'bearer' } },
      fields: ['apiEndpoint', 'method', 'pageSize', 'authentication.token'],
    },
    missing: { config: {}, fields: ['apiEndpoint'] },
  },
  records: readWith(api, apiSource),
  keys: 'content',
  signal: { hanging: () => ({ config: { apiEndpoint: `${misbehaving.url}/hang/items` } }) },
  limits: {
    source: apiSource,
    count: 250,
    maxRecords: 'sync',
    maxBytes: 'refuses',
    cap: { config: { maxPages: 1 }, field: 'maxPages', records: 100 },
  },
  failures: () => {
    const base = apiFixture.server.url
    const token = 'tok-Zq8+recognisable/secret='
    const clientSecret = 'cs-Zq8 recognisable&secret='
    return [
      {
        what: 'a 401 that echoes the bearer token',
        run: failing(api, { apiEndpoint: `${base}/bearer`, authentication: { type: 'bearer', token } }),
        secrets: [token],
      },
      {
        what: 'a token endpoint that echoes the form with the client secret',
        run: failing(api, {
          apiEndpoint: `${base}/oauth/items`,
          authentication: {
            type: 'oauth2',
            clientId: 'cid',
            clientSecret,
            tokenUrl: `${base}/token?post=1`,
            tokenAuthMethod: 'client_secret_post',
          },
          retryAttempts: 0,
        }),
        secrets: [clientSecret],
      },
    ]
  },
})

const fhirSource = () => ({ config: { baseUrl: fhirFixture.baseUrl, resourceType: 'Patient', pageSize: 10 } })
testConnector({
  name: 'fhir',
  connector: fhir,
  config: {
    bad: {
      config: { baseUrl: 'ftp://fhir.test', resourceType: 'patient', pageSize: 5000, timeout: 0 },
      fields: ['baseUrl', 'resourceType', 'pageSize', 'timeout'],
    },
    missing: { config: {}, fields: ['baseUrl', 'resourceType'] },
  },
  records: readWith(fhir, fhirSource),
  keys: 'own',
  signal: { hanging: () => ({ config: { baseUrl: `${misbehaving.url}/hang/fhir`, resourceType: 'Patient' } }) },
  limits: {
    source: fhirSource,
    count: 25,
    maxRecords: 'sync',
    maxBytes: 'refuses',
    cap: { config: { maxPages: 1 }, field: 'maxPages', records: 10 },
  },
  failures: () => {
    const token = 'fhir-Zq8+recognisable/token'
    const clientSecret = 'fhir-cs-Zq8&recognisable='
    return [
      {
        what: 'an OperationOutcome that quotes the token',
        run: failing(fhir, {
          baseUrl: `${misbehaving.url}/echo-auth/fhir`,
          resourceType: 'Patient',
          authentication: { type: 'bearer', token },
        }),
        secrets: [token],
      },
      {
        what: 'a token endpoint that echoes the client secret',
        run: failing(fhir, {
          baseUrl: fhirFixture.baseUrl,
          resourceType: 'Patient',
          authentication: {
            type: 'oauth2',
            clientId: 'cid',
            clientSecret,
            tokenUrl: `${apiFixture.server.url}/token?post=1`,
            tokenAuthMethod: 'client_secret_post',
          },
          retryAttempts: 0,
        }),
        secrets: [clientSecret],
      },
    ]
  },
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

testConnector(webhookContract(webhook))
