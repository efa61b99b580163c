/**
 * A turn of the event loop for others: resolves after the timers, sockets and requests already
 * waiting. For long loops of awaited database statements — the native libSQL client runs a
 * statement to its end before it answers, so awaiting it alone never lets anything else run.
 * Where the runtime has `setImmediate` (Node), the turn comes right after the waiting I/O; a timer
 * of 0 ms elsewhere (Deno, Workers), which Node would stretch to 1 ms: a millisecond of idle per
 * batch of a loop of a hundred batches.
 */
const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate

export const nextTurn = (): Promise<void> =>
  new Promise((resolve) => {
    if (typeof immediate === 'function') immediate(resolve)
    else setTimeout(resolve, 0)
  })
