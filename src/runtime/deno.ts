/**
 * The Deno entry (`deno task start`): the same primitives as Node through Deno's node:
 * compatibility (native libSQL file database, memory or Redis cache, FILES_DIR), migrations at
 * start-up, `Deno.serve` on PORT, the interval scheduler, graceful shutdown on SIGTERM/SIGINT.
 */
import { createApp } from '../app.ts'
import { type Config, ConfigError, parseConfig } from '../config.ts'
import { buildDeps } from '../deps.ts'
import { createLogger } from '../lib/logger.ts'
import { signToken } from '../lib/tokens.ts'
import { drainableHandler } from './deno-drain.ts'
import { nodePrimitives, withDevSecrets } from './node-primitives.ts'
import { startScheduler } from './scheduler-loop.ts'

/** The part of the Deno namespace this entry uses (tsc type-checks src/ with Node's types only). */
interface DenoApi {
  env: { toObject(): Record<string, string>; get(name: string): string | undefined }
  serve(
    options: { port: number; hostname?: string; onListen?: (addr: { port: number }) => void },
    handler: (req: Request, info: { remoteAddr: { hostname: string; port: number } }) => Response | Promise<Response>,
  ): { shutdown(): Promise<void>; finished: Promise<void> }
  addSignalListener(signal: 'SIGTERM' | 'SIGINT', handler: () => void): void
  exit(code: number): never
}
declare const Deno: DenoApi

async function main() {
  let config: Config
  try {
    config = withDevSecrets(parseConfig(Deno.env.toObject()))
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      Deno.exit(1)
    }
    throw err
  }
  const log = createLogger(config.logLevel)
  if (config.authDisabled) log.warn('AUTH_DISABLED=true: requests are not authenticated (development only)')

  const deps = await buildDeps(config, { ...(await nodePrimitives(config, log)), runtime: 'deno', log })
  const app = createApp(() => deps)
  const scheduler = startScheduler(deps)
  const drainable = drainableHandler()
  const server = Deno.serve(
    {
      port: config.port,
      onListen: async ({ port }) => {
        log.info('listening', { url: `http://localhost:${port}`, docs: `http://localhost:${port}/docs`, runtime: 'deno' })
        if (config.env !== 'production' && !Deno.env.get('JWT_SECRET')) {
          const token = await signToken(deps.config.jwtSecret, { tenantId: config.devTenantId, userId: config.devUserId })
          console.log(
            `\nPanels API on http://localhost:${port} (Deno)  (docs: http://localhost:${port}/docs)\n` +
              `Development token (tenant ${config.devTenantId}, user ${config.devUserId}, 24 h):\n\n  ${token}\n`,
          )
        }
      },
    },
    async (req, info) => {
      const { hostname, port } = info.remoteAddr
      const stopping = drainable.refuses(`${hostname}:${port}`)
      return drainable.finish(await app.fetch(req, { clientIp: hostname, stopping }))
    },
  )

  let stopping = false
  // docs/operations.md: the same stop as Node's, within SHUTDOWN_TIMEOUT_SECONDS.
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const deadline = Date.now() + config.shutdownTimeoutMs
    const force = setTimeout(() => {
      log.error('shutdown timed out')
      Deno.exit(1)
    }, config.shutdownTimeoutMs)
    scheduler.stop()
    const until = deadline - 250
    // Stops accepting once quiet and waits for in-flight requests; background work settles meanwhile.
    await Promise.all([drainable.quiet(until).then(() => server.shutdown()), deps.settle({ until })])
    await deps.close({ until })
    clearTimeout(force)
    log.info('stopped', { signal })
    Deno.exit(0)
  }
  Deno.addSignalListener('SIGTERM', () => void shutdown('SIGTERM'))
  Deno.addSignalListener('SIGINT', () => void shutdown('SIGINT'))
}

main().catch((err) => {
  console.error(err)
  Deno.exit(1)
})
