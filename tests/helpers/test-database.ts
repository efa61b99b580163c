import { type Client, createClient } from '@libsql/client'
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
