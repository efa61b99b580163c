import type { Server as HttpServer, ServerResponse } from 'node:http'
import { Server as NetServer, type Socket } from 'node:net'

/**
 * The HTTP side of a graceful stop on Node, without the keep-alive race.
 *
 * A client reuses a keep-alive connection whenever it likes; a server that closes an idle one
 * (what `http.Server.close()` does at once since Node 19, and `closeIdleConnections()` does) can
 * meet a request already on the wire: the request is lost and the client sees a reset. So a
 * draining server never closes a connection the client might be writing on:
 *
 * - every response sent from the signal on carries `Connection: close`, so the client closes the
 *   connection after reading it, and each open connection carries at most one more request;
 * - a connection idle at the signal is left to Node's own keep-alive timeout (`Keep-Alive:
 *   timeout=5`, which clients honour by not reusing it that late);
 * - a connection opened after the signal has its requests refused (`refuses`: the app answers
 *   503 with Retry-After and `Connection: close`, nothing done), so clients go elsewhere;
 * - the listener stops only once every connection open at the signal has closed and no new one
 *   has come for QUIET_MS: closing a listening socket resets the connections still waiting in
 *   its accept queue, requests written on them included. It stops with `net.Server#close`, which
 *   unlike `http.Server#close` leaves idle connections alone; then the last connections finish.
 *
 * Whatever is still open at `deadline` is destroyed.
 */
export function drainableServer(server: HttpServer) {
  let draining = false
  let lastAccepted = 0
  const sockets = new Set<Socket>()
  const late = new WeakSet<Socket>()
  const unanswered = new Set<ServerResponse>()
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    if (!draining) return
    late.add(socket)
    lastAccepted = Date.now()
    // A connection opened while draining that sends nothing must not hold the stop until the deadline.
    socket.setTimeout(server.keepAliveTimeout)
  })
  // First of the 'request' listeners, so the header is set before the app can write its answer.
  server.prependListener('request', (_req, res: ServerResponse) => {
    if (draining) {
      res.setHeader('Connection', 'close')
      return
    }
    unanswered.add(res)
    res.once('close', () => unanswered.delete(res))
    res.once('finish', () => unanswered.delete(res))
  })

  /** Resolves once no connection has been accepted for QUIET_MS. */
  async function quiet() {
    for (;;) {
      const wait = lastAccepted + QUIET_MS - Date.now()
      if (wait <= 0) return
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }

  return {
    /** Whether a request on this connection is to be refused: it was opened after the signal. */
    refuses: (socket: Socket | undefined) => draining && socket !== undefined && late.has(socket),
    /** Resolves when every connection has ended (or was destroyed at `deadline`, epoch ms). */
    async drain(deadline: number) {
      draining = true
      lastAccepted = Date.now()
      for (const res of unanswered) if (!res.headersSent) res.setHeader('Connection', 'close')
      const openAtSignal = [...sockets].filter((s) => !s.destroyed)
      await within(deadline, Promise.all(openAtSignal.map(closed)))
      await within(deadline, quiet())
      const stopped = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()))
      if (!(await within(deadline, stopped))) server.closeAllConnections()
    },
  }
}

/** How long the listener must have accepted nothing before it stops. */
const QUIET_MS = 500

/** Resolves when the connection has closed, however it ends. */
const closed = (socket: Socket) =>
  new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())))

/** Whether `work` settled before `deadline` (epoch ms). */
async function within(deadline: number, work: Promise<unknown>): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()))
  })
  try {
    return await Promise.race([work.then(() => true as const), late])
  } finally {
    clearTimeout(timer)
  }
}
