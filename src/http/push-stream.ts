/**
 * Response bodies produced as they are read: a web ReadableStream fed by a producer with
 * backpressure (the producer waits while the reader is behind), made of Web APIs only. Exports,
 * `$viewdefinition-run` and the read audit of a stream (which tells a cancelled one) use it.
 */

/** Hands one chunk to the reader; resolves once the reader wants more. */
export type Push = (chunk: Uint8Array) => Promise<void>

/** Thrown into a producer when the reader went away (the client closed the download or the stream). */
export class StreamCancelled extends Error {
  constructor() {
    super('The stream was cancelled by the client')
    this.name = 'StreamCancelled'
  }
}

/** Bytes queued ahead of the reader before the producer pauses. */
const HIGH_WATER_MARK = 512 * 1024

/**
 * A byte stream whose chunks `produce` pushes. The producer pauses while more than
 * HIGH_WATER_MARK bytes wait for the reader and stops (StreamCancelled) when the reader cancels.
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
          if (cancelled) throw new StreamCancelled()
          if (chunk.byteLength > 0) controller.enqueue(chunk)
          while (!cancelled && (controller.desiredSize ?? 1) <= 0) await new Promise<void>((r) => (wake = r))
          if (cancelled) throw new StreamCancelled()
        }
        produce(push).then(
          () => {
            if (!cancelled) controller.close()
          },
          (err) => {
            if (cancelled || err instanceof StreamCancelled) return
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
