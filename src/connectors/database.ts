import { CONNECTOR_TYPE, DatabaseConfig, isPostgres } from './database-config.ts'
import { readPostgres } from './database-postgres.ts'
import { readSqlite } from './database-sqlite.ts'
import { defineConnector } from './types.ts'

/**
 * Reads a PostgreSQL table or query, or an SQLite/libSQL one (DATA-ENGINE: Connectors, `database`),
 * in batches of `batchSize`. With `incrementalColumn` only rows past the stored cursor are read,
 * in that column's order, and each batch carries the cursor of its last complete value. Keys: the
 * table's primary key when it has one (else `keyField`, else a content hash).
 */
export default defineConnector<DatabaseConfig>({
  type: CONNECTOR_TYPE,
  configSchema: DatabaseConfig,
  mode: (config) => (config.incrementalColumn ? 'incremental' : 'full'),
  async *read(config, ctx) {
    if (isPostgres(config.connectionString)) yield* readPostgres(config, ctx)
    else yield* readSqlite(config, ctx)
  },
})
