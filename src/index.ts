/**
 * The package entry for hosts that embed the service (docs/embedding.md), built to dist/lib by
 * `npm run build:lib`:
 *
 * ```ts
 * const panels = await openPanelService({ ...hostEnvironment, SINGLE_TENANT_ID: 'clinic-7' })
 * host.route('/panels-api', panels.app)
 * panels.startScheduler()
 * ```
 *
 * Everything exported here is typed by Hono and this package's own plain types only: the database
 * (drizzle) and cache (unstorage) types stay inside, so a strict host type-checks the declarations
 * with `skipLibCheck: false`. scripts/build-lib.ts refuses a build whose declarations reach further.
 */
export { type Config, ConfigError, type EnvRecord, parseConfig, type RateLimitRule } from './config.ts'
export { createLogger, type LogFields, type Logger, type LogLevel } from './lib/logger.ts'
export { signToken, type TokenRequest } from './lib/tokens.ts'
export {
  type EmbedOptions,
  openPanelService,
  type PanelService,
  type SchedulerLoop,
  type ServiceApp,
} from './runtime/embedded.ts'
export type { MaintenanceReport } from './scheduler/maintenance-report.ts'
