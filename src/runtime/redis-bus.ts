import { Redis } from 'ioredis'
import type { Logger } from '../lib/logger.ts'
import { createLocalBus, type LiveBus } from '../live/bus.ts'

/** The channel every instance publishes its commits on and subscribes to. */
export const EVENTS_CHANNEL = 'panels:events:committed'

/**
 * The bus of the scale-out deployment (docs/live.md "Several instances"): a commit wakes this
 * process's streams at once and is PUBLISHed on Redis; every instance SUBSCRIBEs and wakes its own
 * streams of that tenant. A message is `<instance id> <tenant id>`, so an instance skips its own.
 * Redis only carries wake-ups: when it is down or a message is lost, streams find the events at
 * their next poll of the log (≤ EVENTS_POLL_INTERVAL_MS).
 */
export function createRedisBus(url: string, log: Logger): LiveBus {
  const local = createLocalBus()
  const instance = crypto.randomUUID()
  const options = { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false }
  const pub = new Redis(url, options)
  const sub = new Redis(url, { ...options, enableOfflineQueue: true })
  let warned = false
  const failed = (what: string) => (err: Error) => {
    if (warned) return
    warned = true
    log.warn('event bus: Redis unavailable, streams fall back to polling the log', { what, error: err.message })
  }
  pub.on('error', failed('publish'))
  sub.on('error', failed('subscribe'))
  sub.on('ready', () => {
    warned = false
  })
  sub.subscribe(EVENTS_CHANNEL).catch(failed('subscribe'))
  sub.on('message', (_channel: string, message: string) => {
    const space = message.indexOf(' ')
    if (space < 0 || message.slice(0, space) === instance) return
    local.committed(message.slice(space + 1))
  })
  let closing: Promise<void> | undefined
  return {
    closed: local.closed,
    committed(tenantId) {
      local.committed(tenantId)
      if (closing) return
      pub.publish(EVENTS_CHANNEL, `${instance} ${tenantId}`).catch(failed('publish'))
    },
    listen: local.listen,
    listenAll: local.listenAll,
    close() {
      closing ??= (async () => {
        await local.close()
        await Promise.allSettled([pub.quit(), sub.quit()])
        pub.disconnect()
        sub.disconnect()
      })()
      return closing
    },
  }
}
