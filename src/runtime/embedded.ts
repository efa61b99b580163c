import type { Hono } from 'hono'
import { createApp } from '../app.ts'
import { ConfigError, type EnvRecord, parseConfig } from '../config.ts'
import { buildDeps } from '../deps.ts'
import type { Logger } from '../lib/logger.ts'
import type { MaintenanceReport } from '../scheduler/maintenance-report.ts'
import { runMaintenanceTick } from '../scheduler/maintenance-tick.ts'
import { nodePrimitives } from './node-primitives.ts'
import { startScheduler } from './scheduler-loop.ts'

/**
 * The app as a host sees it: a Hono app to mount. Its own environment type (request variables that
 * hold the database) is its business, and a Hono app of one environment type is not assignable to
 * another's, hence `any`; a host's `route()` takes any Hono app.
 */
export type ServiceApp = Hono<any>

/** The interval scheduler a host started; `stop()` resolves once the running step has ended. */
export interface SchedulerLoop {
  stop(): Promise<void>
}

/**
 * The service as a host holds it (docs/embedding.md). Its types name nothing but Hono and this
 * package's own plain types, so a strict host type-checks them with `skipLibCheck: false`.
 */
export interface PanelService {
  /** The whole API (`/api/*`, `/health`, `/docs`); mount it with `host.route('/panels-api', service.app)`. */
  readonly app: ServiceApp
  /**
   * One scheduler step, the one the loop and the Workers cron run: sends the outbound webhook
   * deliveries that are due, recovers interrupted syncs, runs the sources whose schedule is due at
   * `now` (default: the clock), recomputes stale panels.
   */
  runMaintenanceTick(now?: Date): Promise<MaintenanceReport>
  /**
   * Recovers syncs a previous process left running, then runs `runMaintenanceTick` every
   * SYNC_INTERVAL_SECONDS (not with SYNC_SCHEDULER=false). One loop at a time: a second call
   * returns the running one.
   */
  startScheduler(): SchedulerLoop
  /** Stops the scheduler loop (waiting for its running step), then closes the database client and the cache. */
  close(): Promise<void>
}

export interface EmbedOptions {
  /** Where the service logs (structured fields per event); JSON lines on stdout at LOG_LEVEL by default. */
  log?: Logger
}

/**
 * Opens the service inside a Node host: parses `env` like the Node entry (the same variables,
 * SINGLE_TENANT_ID for an appliance of one tenant), opens and migrates DATABASE_URL, opens the
 * cache and the files root. JWT_SECRET and ENCRYPTION_KEY are required: an embedded service has no
 * development secrets of its own to fall back on. Throws ConfigError naming each bad variable.
 */
export async function openPanelService(env: EnvRecord, options: EmbedOptions = {}): Promise<PanelService> {
  const config = parseConfig(env)
  const missing = (['JWT_SECRET', 'ENCRYPTION_KEY'] as const).filter((v) => !env[v])
  if (missing.length > 0) throw new ConfigError(missing.map((variable) => ({ variable, message: 'required when embedded' })))
  const deps = await buildDeps(config, { ...(await nodePrimitives(config, options.log)), log: options.log })
  const app: ServiceApp = createApp(() => deps)
  let loop: ReturnType<typeof startScheduler> | undefined
  let closing: Promise<void> | undefined
  return {
    app,
    runMaintenanceTick: (now) => runMaintenanceTick(deps, now),
    startScheduler() {
      if (closing) throw new Error('the panel service is closed')
      loop ??= startScheduler(deps)
      const started = loop
      return {
        async stop() {
          if (loop === started) loop = undefined
          await started.stop()
        },
      }
    },
    close() {
      closing ??= (async () => {
        await loop?.stop()
        await deps.close()
      })()
      return closing
    },
  }
}
