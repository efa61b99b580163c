import { type Client, createClient } from '@libsql/client'
import { afterEach, describe, expect, it } from 'vitest'
import { createDb } from '../../src/db/client.ts'
import { applyMigrations } from '../../src/runtime/migrate.ts'
import { dumpDatabase, migratedDatabaseSql } from './test-database.ts'

/** makeTestApp's databases start as a replay of one migrated database: it must be that database. */

const opened: Client[] = []
afterEach(() => {
  for (const client of opened.splice(0)) client.close()
})

function memory(): Client {
  const client = createClient({ url: ':memory:' })
  opened.push(client)
  return client
}

/** Everything a database holds: its schema entries and each table's rows. */
async function contents(client: Client) {
  const schema = (await client.execute('SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name')).rows.map(
    (row) => ({ ...row }),
  )
  const rows: Record<string, unknown[]> = {}
  for (const { name } of schema.filter((entry) => entry.type === 'table')) {
    rows[String(name)] = (await client.execute(`SELECT * FROM "${String(name).replaceAll('"', '""')}"`)).rows.map((row) => ({
      ...row,
    }))
  }
  return { schema, rows }
}

describe('the migrated database the test apps start from', () => {
  it('is the database the migrations make: same schema, same journal', async () => {
    const migrated = memory()
    await applyMigrations(createDb(migrated))
    const replayed = memory()
    await replayed.executeMultiple(await migratedDatabaseSql())
    const want = await contents(migrated)
    expect(want.schema.length).toBeGreaterThan(20)
    expect(want.rows.__drizzle_migrations.length).toBeGreaterThan(0)
    expect(await contents(replayed)).toEqual(want)
  })

  it('leaves the migrations nothing to do', async () => {
    const replayed = memory()
    await replayed.executeMultiple(await migratedDatabaseSql())
    const before = await contents(replayed)
    await applyMigrations(createDb(replayed))
    expect(await contents(replayed)).toEqual(before)
  })

  it('dumps values of every storage class, names that need quoting, and sqlite_sequence', async () => {
    const source = memory()
    await source.executeMultiple(`
      CREATE TABLE "odd ""name""" (id INTEGER PRIMARY KEY AUTOINCREMENT, "it's" ANY, n REAL);
      CREATE INDEX odd_n ON "odd ""name""" (n);
      INSERT INTO "odd ""name""" ("it's", n) VALUES (NULL, 1.5), (42, -0.25), ('a''b', 1e300), (x'00ff', NULL), ('', 3);
      DELETE FROM "odd ""name""" WHERE id = 5;
    `)
    const copy = memory()
    await copy.executeMultiple(await dumpDatabase(source))
    expect(await contents(copy)).toEqual(await contents(source))
    const types = await copy.execute(`SELECT typeof("it's") AS t FROM "odd ""name""" ORDER BY id`)
    expect(types.rows.map((row) => row.t)).toEqual(['null', 'integer', 'text', 'blob'])
    const next = await copy.execute(`INSERT INTO "odd ""name""" (n) VALUES (0) RETURNING id`)
    expect(Number(next.rows[0].id)).toBe(6)
  })
})
