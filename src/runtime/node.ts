import type { Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { createApp } from '../app.ts'
import { type Config, ConfigError, parseConfig } from '../config.ts'
import { buildDeps } from '../deps.ts'
import { createLogger } from '../lib/logger.ts'
import { signToken } from '../lib/tokens.ts'
import { bufferedStdout, nodePrimitives, withDevSecrets } from './node-primitives.ts'
import { startScheduler } from './scheduler-loop.ts'

async function main() {
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

  const deps = await buildDeps(config, { ...(await nodePrimitives(config)), log })
  const app = createApp(() => deps)
  const scheduler = startScheduler(deps)
  const server = serve({
    fetch: (req, env: { incoming?: { socket?: { remoteAddress?: string } } }) =>
      app.fetch(req, { clientIp: env?.incoming?.socket?.remoteAddress }),
    port: config.port,
  })

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
  const shutdown = (signal: string) => {
    if (stopping) return
    stopping = true
    log.info('shutting down', { signal })
    const force = setTimeout(() => {
      log.error('shutdown timed out; closing connections')
      process.exit(1)
    }, 10_000)
    force.unref()
    // Stop accepting; in-flight requests finish; idle keep-alive sockets close now.
    const http = server as HttpServer
    server.close(async () => {
      clearInterval(idle)
      await scheduler.stop()
      await deps.close()
      log.info('stopped')
      process.exit(0)
    })
    http.closeIdleConnections()
    // A keep-alive socket turns idle when its in-flight response ends: close it then rather than
    // after keepAliveTimeout, and answer requests still arriving on open sockets with Connection: close.
    const idle = setInterval(() => http.closeIdleConnections(), 100)
    http.on('request', (_req, res) => res.setHeader('Connection', 'close'))
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
