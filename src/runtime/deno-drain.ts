/**
 * The HTTP side of a graceful stop on Deno. `Deno.serve`'s `shutdown()` closes idle keep-alive
 * connections at once, which can meet a request already on the wire (lost, the client sees a
 * reset), and Deno gives a handler no connection events. So, from the signal on:
 *
 * - every response carries `Connection: close`, so each open connection carries at most one more
 *   request and is then closed by the client;
 * - a request from a connection (remote address and port) not seen before the signal is refused
 *   cleanly (`refuses`: 503, Retry-After, nothing done), so clients go elsewhere;
 * - `shutdown()` is called only once no request has come for QUIET_MS (or at the deadline).
 *
 * A connection left idle since before the signal is closed by `shutdown()`; a client that sends on
 * it in that very instant can still see a reset (Node avoids this with its keep-alive timeout).
 */
export function drainableHandler() {
  let draining = false
  let lastRequest = 0
  const seen = new Set<string>()
  return {
    /** Called for every request with its connection's `host:port`: whether to refuse it. */
    refuses(connection: string): boolean {
      if (!draining) {
        seen.add(connection)
        return false
      }
      lastRequest = Date.now()
      return !seen.has(connection)
    },
    /** The response as sent: with `Connection: close` while draining. */
    finish(res: Response): Response {
      if (!draining) return res
      try {
        res.headers.set('connection', 'close')
        return res
      } catch {
        // Immutable headers (a fetched response): a copy that may carry it.
        const copy = new Response(res.body, res)
        copy.headers.set('connection', 'close')
        return copy
      }
    },
    /** Starts draining; resolves once no request has come for QUIET_MS, or at `deadline` (epoch ms). */
    async quiet(deadline: number) {
      draining = true
      lastRequest = Date.now()
      for (;;) {
        const wait = Math.min(lastRequest + QUIET_MS, deadline) - Date.now()
        if (wait <= 0) return
        await new Promise((resolve) => setTimeout(resolve, wait))
      }
    },
  }
}

const QUIET_MS = 500
