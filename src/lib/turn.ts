/**
 * A turn of the event loop for others: resolves from a timer, after the timers, sockets and requests
 * already waiting. For long loops of awaited database statements — the native libSQL client runs a
 * statement to its end before it answers, so awaiting it alone never lets anything else run. The
 * same on Node, Deno and Workers (a timer of 0 ms; Node makes it at least 1 ms).
 */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0))
