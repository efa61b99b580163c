/**
 * The package entry for hosts that embed the service (docs/runtimes.md, "Embedded"):
 *
 * ```ts
 * const config = parseConfig({ ...hostEnvironment, SINGLE_TENANT_ID: 'clinic-7' })
 * const deps = await buildDeps(config, await nodePrimitives(config)) // opens and migrates the database
 * host.route('/panels-api', createApp(() => deps))
 * ```
 *
 * A host with its own libSQL client uses `createDb(client)` and `applyMigrations(db)` instead of
 * `nodePrimitives`. The Node builders come from src/runtime/ (node:fs, native libSQL); everything
 * else here is runtime-neutral.
 */
export { type App, createApp, OPENAPI_INFO } from './app.ts'
export { type Config, ConfigError, type EnvRecord, parseConfig } from './config.ts'
export { createDb, type Db } from './db/client.ts'
export { buildDeps, type Deps, type Primitives } from './deps.ts'
export type { MakeDeps } from './http/context.ts'
export type { FileStore } from './lib/files.ts'
export { createLogger, type Logger } from './lib/logger.ts'
export { signToken, type TokenRequest } from './lib/tokens.ts'
export { applyMigrations, MIGRATIONS_DIR } from './runtime/migrate.ts'
export { nodeFileStore } from './runtime/node-files.ts'
export { nodePrimitives, openDatabase, openStorage, withDevSecrets } from './runtime/node-primitives.ts'
