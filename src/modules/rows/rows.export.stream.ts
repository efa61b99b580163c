/**
 * Streams for exports: a web ReadableStream fed by a producer with backpressure (the producer
 * waits while the reader is behind), and a minimal Node-style writable for libraries that `pipe()`
 * into one (exceljs's zip writer), made of Web APIs only.
 */

/** Hands one chunk to the reader; resolves once the reader wants more. */
export type Push = (chunk: Uint8Array) => Promise<void>

/** Thrown into a producer when the reader went away (client closed the download). */
export class ExportCancelled extends Error {
  constructor() {
    super('The export was cancelled by the client')
    this.name = 'ExportCancelled'
  }
}

/** Bytes queued ahead of the reader before the producer pauses. */
const HIGH_WATER_MARK = 512 * 1024

/**
 * A byte stream whose chunks `produce` pushes. The producer pauses while more than
 * HIGH_WATER_MARK bytes wait for the reader and stops (ExportCancelled) when the reader cancels.
 * A producer failure errors the stream; `onError` sees it (the response has started by then).
 */
export function pushStream(produce: (push: Push) => Promise<void>, onError: (err: unknown) => void): ReadableStream<Uint8Array> {
  let wake: (() => void) | undefined
  let cancelled = false
  const resume = () => {
    const w = wake
    wake = undefined
    w?.()
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const push: Push = async (chunk) => {
          if (cancelled) throw new ExportCancelled()
          if (chunk.byteLength > 0) controller.enqueue(chunk)
          while (!cancelled && (controller.desiredSize ?? 1) <= 0) await new Promise<void>((r) => (wake = r))
          if (cancelled) throw new ExportCancelled()
        }
        produce(push).then(
          () => {
            if (!cancelled) controller.close()
          },
          (err) => {
            if (cancelled || err instanceof ExportCancelled) return
            onError(err)
            controller.error(err)
          },
        )
      },
      pull: resume,
      cancel() {
        cancelled = true
        resume()
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: HIGH_WATER_MARK }),
  )
}

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
