import type { Server as HttpServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { serve } from '@hono/node-server'
import { createApp } from '../app.ts'
import { type Config, ConfigError, parseConfig } from '../config.ts'
import { buildDeps } from '../deps.ts'
import { createLogger } from '../lib/logger.ts'
import { signToken } from '../lib/tokens.ts'
import { drainableServer } from './node-drain.ts'
import { tuneHeap } from './node-heap.ts'
import { bufferedStdout, nodePrimitives, withDevSecrets } from './node-primitives.ts'
import { startScheduler } from './scheduler-loop.ts'

async function main() {
  tuneHeap()
  let config: Config
  try {
    config = withDevSecrets(parseConfig(process.env))
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(1)
    }
    throw err
  }
  const log = createLogger(config.logLevel, bufferedStdout())
  if (config.authDisabled) log.warn('AUTH_DISABLED=true: requests are not authenticated (development only)')

  const deps = await buildDeps(config, { ...(await nodePrimitives(config, log)), log })
  const app = createApp(() => deps)
  const scheduler = startScheduler(deps)
  const server = serve({
    fetch: (req, env: { incoming?: { socket?: Socket } }) => {
      const socket = env?.incoming?.socket
      return app.fetch(req, { clientIp: socket?.remoteAddress, stopping: drainable.refuses(socket) })
    },
    port: config.port,
  })
  const drainable = drainableServer(server as HttpServer)

  server.once('listening', async () => {
    const { port } = server.address() as AddressInfo
    log.info('listening', { url: `http://localhost:${port}`, docs: `http://localhost:${port}/docs` })
    if (config.env !== 'production' && !process.env.JWT_SECRET) {
      const token = await signToken(deps.config.jwtSecret, { tenantId: config.devTenantId, userId: config.devUserId })
      console.log(
        `\nPanels API on http://localhost:${port}  (docs: http://localhost:${port}/docs)\n` +
          `Development token (tenant ${config.devTenantId}, user ${config.devUserId}, 24 h):\n\n  ${token}\n\n` +
          `Try: curl -H "Authorization: Bearer <token>" "http://localhost:${port}/api/panels?tenantId=${config.devTenantId}&userId=${config.devUserId}"\n`,
      )
    }
  })

  let stopping = false
  // docs/operations.md: answer every request read, drain keep-alive connections without a reset,
  // finish or hand back background work, close the database, all within SHUTDOWN_TIMEOUT_SECONDS.
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const deadline = Date.now() + config.shutdownTimeoutMs
    const force = setTimeout(() => {
      log.error('shutdown timed out; closing connections')
      ;(server as HttpServer).closeAllConnections()
      process.exit(1)
    }, config.shutdownTimeoutMs)
    force.unref()
    scheduler.stop()
    // Connections and background work drain side by side (an idle keep-alive connection may take
    // its keep-alive timeout); the last quarter second is kept for closing the database and the log.
    const until = deadline - 250
    await Promise.all([drainable.drain(until), deps.settle({ until })])
    await deps.close({ until })
    clearTimeout(force)
    log.info('stopped', { signal })
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
