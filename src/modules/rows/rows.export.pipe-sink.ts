/**
 * A minimal Node-style writable for libraries that `pipe()` into one (exceljs's zip writer), made
 * of Web APIs only, whose chunks go on to a push stream (src/http/push-stream.ts).
 */

type Listener = (...args: unknown[]) => void

/**
 * The part of a Node writable stream that `readable.pipe(dest)` and exceljs use (events, write,
 * end), forwarding every chunk to `onChunk`. `write` answers false while `busy()` so the piping
 * source waits for 'drain', which `drain()` emits.
 */
export class PipeSink {
  private listeners = new Map<string, Listener[]>()
  writable = true

  constructor(
    private readonly onChunk: (chunk: Uint8Array) => void,
    private readonly busy: () => boolean,
  ) {}

  on(event: string, listener: Listener) {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener])
    return this
  }
  addListener(event: string, listener: Listener) {
    return this.on(event, listener)
  }
  prependListener(event: string, listener: Listener) {
    this.listeners.set(event, [listener, ...(this.listeners.get(event) ?? [])])
    return this
  }
  once(event: string, listener: Listener) {
    const once: Listener = (...args) => {
      this.removeListener(event, once)
      listener(...args)
    }
    return this.on(event, once)
  }
  removeListener(event: string, listener: Listener) {
    this.listeners.set(
      event,
      (this.listeners.get(event) ?? []).filter((l) => l !== listener),
    )
    return this
  }
  off(event: string, listener: Listener) {
    return this.removeListener(event, listener)
  }
  listenerCount(event: string) {
    return this.listeners.get(event)?.length ?? 0
  }
  emit(event: string, ...args: unknown[]) {
    const list = this.listeners.get(event) ?? []
    for (const l of [...list]) l(...args)
    return list.length > 0
  }
  write(chunk: Uint8Array | string, encoding?: unknown, callback?: unknown) {
    this.onChunk(typeof chunk === 'string' ? new TextEncoder().encode(chunk) : new Uint8Array(chunk))
    const cb = typeof encoding === 'function' ? encoding : callback
    if (typeof cb === 'function') queueMicrotask(() => cb())
    return !this.busy()
  }
  end(chunk?: unknown) {
    if (chunk instanceof Uint8Array || typeof chunk === 'string') this.write(chunk)
    this.writable = false
    queueMicrotask(() => {
      this.emit('finish')
      this.emit('close')
    })
    return this
  }
  /** Lets a paused source go on. */
  drain() {
    this.emit('drain')
  }
  destroy() {
    this.writable = false
    return this
  }
}
