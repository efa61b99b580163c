import { fileURLToPath } from 'node:url'
import { migrate } from 'drizzle-orm/libsql/migrator'
import type { Db } from '../db/client.ts'

/** The committed drizzle-kit migrations, found from this file in src/ and in dist/ alike. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations', import.meta.url))

/** Applies pending migrations (Node, Deno and tests; Workers migrate with wrangler instead). */
export async function applyMigrations(db: Db, migrationsFolder = MIGRATIONS_DIR) {
  await migrate(db, { migrationsFolder })
}
