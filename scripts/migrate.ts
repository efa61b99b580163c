/**
 * `npm run db:migrate`: applies the committed migrations (./migrations) to DATABASE_URL, the same way
 * the Node entry does at start-up (openDatabase), then exits. Useful before a deploy, or against a
 * remote libSQL/Turso database (DATABASE_URL=libsql://… DATABASE_AUTH_TOKEN=…).
 */
import { ConfigError, parseConfig } from '../src/config.ts'
import { openDatabase } from '../src/runtime/node-primitives.ts'

/** The URL without credentials or query (auth tokens may sit in either). */
function redact(url: string) {
  return url.replace(/\/\/[^@/]*@/, '//***@').replace(/\?.*$/, '')
}

async function main() {
  let config: ReturnType<typeof parseConfig>
  try {
    // Only the database variables matter here: a deploy step need not hold the app's secrets.
    config = parseConfig({ DATABASE_URL: process.env.DATABASE_URL, DATABASE_AUTH_TOKEN: process.env.DATABASE_AUTH_TOKEN })
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(1)
    }
    throw err
  }
  const { client, checkpointer } = await openDatabase(config)
  try {
    const applied = await client.execute('SELECT hash, created_at FROM __drizzle_migrations ORDER BY created_at')
    console.log(`${redact(config.databaseUrl)}: up to date (${applied.rows.length} migration(s) applied)`)
  } finally {
    await checkpointer?.stop()
    client.close()
  }
}

main().catch((err) => {
  console.error('db:migrate failed:', err instanceof Error ? err.message : err)
  process.exit(1)
})
