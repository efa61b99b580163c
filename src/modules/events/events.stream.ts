import type { MiddlewareHandler } from 'hono'
import type { ServiceContext } from '../../context.ts'
import type { AppEnv } from '../../http/context.ts'
import { auditAccess, streamedAccess } from '../audit/audit.record.ts'
import { type FeedSubscriber, joinFeed } from './events.feed.ts'
import { type LoggedEvent, ROW_EVENT_TYPES, toEventDto } from './events.schemas.ts'

/**
 * Server-sent events of the change feed (docs/live.md "Server-sent events"): a ReadableStream of
 * frames `id: <seq>`, `event: <type>`, `data: <event JSON>`, fed by the tenant's shared reader
 * (events.feed.ts), with a `: ping` comment every EVENTS_PING_INTERVAL_MS. The stream ends when
 * the client goes away (its cancel, or the request's signal), when the service stops (the bus closes), when its caller
 * loses the view or panel of its path, or when the client falls too far behind; in each case the
 * stream leaves the feed, so no listener or timer outlives it. The client resumes with
 * `Last-Event-ID`. Where the runtime sees a client go only when a write to it fails (Workers), the
 * stream writes an empty comment every poll interval, so such a write comes soon after a close.
 */

export const EVENT_STREAM = 'text/event-stream'

/** True when the request asks for server-sent events. */
export const wantsStream = (accept: string | undefined) => accept?.includes(EVENT_STREAM) === true

/** Bytes queued for a client that does not read before its stream is ended (it resumes with Last-Event-ID). */
const MAX_QUEUED_BYTES = 1024 * 1024

const encoder = new TextEncoder()
const frames = new WeakMap<LoggedEvent, Uint8Array>()
/** An empty comment: the fewest bytes a client ignores, written to find out whether it is still there. */
const PROBE = encoder.encode(':\n\n')

/** The frame of one event, encoded once for every stream it goes to. */
function frameOf(tenantId: string, e: LoggedEvent): Uint8Array {
  let frame = frames.get(e)
  if (!frame) {
    frame = encoder.encode(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(toEventDto(tenantId, e))}\n\n`)
    frames.set(e, frame)
  }
  return frame
}

export interface StreamRequest {
  cursor: number
  filter: FeedSubscriber['filter']
  unlocked: ReadonlySet<number>
  bound?: FeedSubscriber['bound']
  /**
   * The request's signal. A runtime may tell a disconnect there and not cancel the body: workerd
   * releases since 1.20260619 are reported to abort it (with the enable_request_signal flag) and no
   * longer cancel a JavaScript body (cloudflare/workerd#6832).
   */
  clientGone?: AbortSignal
}

/** The SSE body for the caller of `ctx`; the stream's access record is written when it ends. */
export function eventStream(ctx: ServiceContext, req: StreamRequest): ReadableStream<Uint8Array> {
  const tenantId = ctx.scope.tenantId
  let rowsSent = 0
  let lastSentId = req.cursor
  let leave: (() => void) | undefined
  let finished: (() => void) | undefined
  const ended = new Promise<void>((resolve) => {
    finished = resolve
  })
  const record = streamedAccess(ctx, () => rowsSent)
  let cancelStream: (() => void) | undefined
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        let open = true
        const stop = (close: boolean) => {
          if (!open) return
          open = false
          leave?.()
          if (close) {
            try {
              controller.close()
            } catch {
              // already closed by a cancel
            }
          }
          finished?.()
        }
        const write = (bytes: Uint8Array) => {
          if (open) controller.enqueue(bytes)
        }
        const sub: FeedSubscriber = {
          scope: ctx.scope,
          unlocked: req.unlocked,
          filter: req.filter,
          bound: req.bound,
          cursor: req.cursor,
          send(events) {
            for (const e of events) {
              write(frameOf(tenantId, e))
              if (ROW_EVENT_TYPES.has(e.type)) rowsSent++
            }
            lastSentId = events[events.length - 1].seq
            return (controller.desiredSize ?? 0) > -MAX_QUEUED_BYTES
          },
          ping() {
            // The id line moves the client's Last-Event-ID over events it may not read, so a resume
            // after a long quiet time does not start behind the retained log.
            const moved = sub.cursor > lastSentId ? `id: ${sub.cursor}\n` : ''
            if (moved) lastSentId = sub.cursor
            write(encoder.encode(`: ping\n${moved}\n`))
          },
          probe: () => write(PROBE),
          end: () => stop(true),
        }
        cancelStream = () => stop(false)
        write(encoder.encode(': open\n\n'))
        leave = joinFeed(ctx, tenantId, sub)
        ctx.defer(
          record(() => ended),
          { what: 'event stream access record', tenantId },
        )
        // After joining, so the stop leaves the feed. Closed, not only left: a body the runtime no
        // longer reads would otherwise stay open.
        const gone = req.clientGone
        if (gone?.aborted) stop(true)
        else gone?.addEventListener('abort', () => stop(true), { once: true })
      },
      cancel() {
        cancelStream?.()
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  )
}

/**
 * The read audit of the events routes (docs/audit.md): a JSON page is a `read`, a stream a
 * `stream` whose record is written when it ends; `target` names the path's view or panel.
 */
export function auditEvents(target: 'view' | 'panel' | 'none'): MiddlewareHandler<AppEnv> {
  const read = auditAccess('read', target)
  const stream = auditAccess('stream', target)
  return function auditEvents(c, next) {
    return (wantsStream(c.req.header('accept')) ? stream : read)(c, next)
  }
}
