import { type Client, createClient } from '@libsql/client'
import { createDb } from '../../src/db/client.ts'
import { cacheLibsqlStatements } from '../../src/runtime/libsql-statements.ts'
import { applyMigrations } from '../../src/runtime/migrate.ts'
import { freshConnectionClient } from './fresh-connection-client.ts'

/**
 * The databases a test app can run on:
 * - `memory`: one in-memory libSQL connection (the default; foreign keys on, as libSQL sets them);
 * - `fresh-connection`: a temporary file where every statement gets a connection of its own, the
 *   remote protocol's worst case (fresh-connection-client.ts). `npm run test:fresh-connections`
 *   runs the database-touching tests this way.
 */
export type TestDatabase = 'memory' | 'fresh-connection'

const KINDS: TestDatabase[] = ['memory', 'fresh-connection']

/** The client of `kind`, else of `PANEL_TEST_DB`, else `memory`. */
export async function testDatabaseClient(kind: TestDatabase | undefined = fromEnv()): Promise<Client> {
  // Connections keep their prepared statements, as the service's do (src/runtime/node-primitives.ts).
  cacheLibsqlStatements()
  if (kind === 'fresh-connection') return freshConnectionClient()
  const client = createClient({ url: ':memory:' })
  await client.execute('PRAGMA foreign_keys = ON')
  return client
}

function fromEnv(): TestDatabase {
  const value = process.env.PANEL_TEST_DB
  if (value === undefined || value === '') return 'memory'
  if (!(KINDS as string[]).includes(value)) throw new Error(`PANEL_TEST_DB must be one of ${KINDS.join(', ')}; got '${value}'`)
  return value as TestDatabase
}

let migrated: Promise<string> | undefined

/**
 * The database the committed migrations make, as SQL (dumpDatabase): made once per test process by
 * running the real migrations on an in-memory database. makeTestApp replays it into each new test
 * database in one call, a fraction of what running the migrations there costs (the suite makes some
 * 500 apps), and then still runs the migrations, which find every one recorded and change nothing.
 */
export function migratedDatabaseSql(): Promise<string> {
  migrated ??= (async () => {
    const client = createClient({ url: ':memory:' })
    try {
      await applyMigrations(createDb(client))
      return await dumpDatabase(client)
    } finally {
      client.close()
    }
  })().catch((err: unknown) => {
    migrated = undefined
    throw err
  })
  return migrated
}

/**
 * A database as SQL that makes it again on an empty one: its tables, indexes, triggers and views in
 * the order they were created, then every row of every table (SQLite's own `quote()` writes each
 * value, so types and bytes come back as they were), `sqlite_sequence` included.
 */
export async function dumpDatabase(client: Client): Promise<string> {
  const schema = await client.execute(
    "SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
  )
  const statements = schema.rows.map((row) => `${row.sql};`)
  const tables = schema.rows.filter((row) => row.type === 'table').map((row) => String(row.name))
  // Last, and replacing what the inserts above left in it, so AUTOINCREMENT goes on where it was.
  const sequence = await client.execute("SELECT 1 FROM sqlite_schema WHERE name = 'sqlite_sequence'")
  if (sequence.rows.length > 0) tables.push('sqlite_sequence')
  for (const table of tables) {
    const columns = (await client.execute(`SELECT name FROM pragma_table_info(${quoteText(table)})`)).rows.map((row) =>
      quoteName(String(row.name)),
    )
    const values = columns.map((column) => `quote(${column})`).join(" || ', ' || ")
    const rows = await client.execute(`SELECT ${values} AS v FROM ${quoteName(table)}`)
    if (table === 'sqlite_sequence') statements.push('DELETE FROM sqlite_sequence;')
    for (const row of rows.rows) statements.push(`INSERT INTO ${quoteName(table)} (${columns.join(', ')}) VALUES (${row.v});`)
  }
  return statements.join('\n')
}

const quoteName = (name: string) => `"${name.replaceAll('"', '""')}"`
const quoteText = (text: string) => `'${text.replaceAll("'", "''")}'`
