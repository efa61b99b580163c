import { createRoute, type RouteConfig } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import type { AppContext } from '../../http/context.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, ErrorBody, errorResponses, IdParam, PanelIdParam } from '../../http/router.ts'
import { EventPage, type EventsInput, EventsQuery, ScopedEventsQuery, StreamHeaders } from './events.schemas.ts'
import { type EventsTarget, listEvents, openEventStream } from './events.service.ts'
import { auditEvents, EVENT_STREAM, wantsStream } from './events.stream.ts'

const tags = ['Events']

const readDescription =
  'Oldest first, only events the caller may read (docs/live.md "Who reads what"). Page with `after` (the previous `lastSeq`) and `limit` (1–1000, default 100); ' +
  '`types` (comma-separated) narrows. A cursor older than the retained log is a 410 `CURSOR_EXPIRED` with `details.oldestSeq`. ' +
  'With `Accept: text/event-stream` the answer is a server-sent event stream of the same events as they commit (`id: <seq>`, `event: <type>`, `data: <event JSON>`, ' +
  'a `: ping` comment every 15 s), from `Last-Event-ID` (wins) or `after`, else from now.'

const responses = {
  200: {
    description: 'A page of events, or (Accept: text/event-stream) the stream of them',
    content: {
      'application/json': { schema: EventPage },
      [EVENT_STREAM]: { schema: { type: 'string' as const, description: 'Server-sent events, one per event' } },
    },
  },
  410: {
    description: 'The cursor is older than the retained log (CURSOR_EXPIRED; details.oldestSeq)',
    content: { 'application/json': { schema: ErrorBody } },
  },
  ...errorResponses,
} satisfies RouteConfig['responses']

const listRoute = createRoute({
  method: 'get',
  path: '/events',
  tags,
  summary: "Read the tenant's change feed (JSON page or server-sent events)",
  description: `${readDescription} \`panelId\` and \`viewId\` narrow to one panel or view.`,
  security: bearer,
  middleware: auditEvents('none'),
  request: { query: EventsQuery, headers: StreamHeaders },
  responses,
})

const viewRoute = createRoute({
  method: 'get',
  path: '/views/{id}/events',
  tags,
  summary: "A view's events (readers of the view; JSON page or server-sent events)",
  description: `${readDescription} A view the caller may not read is a 404; a password-protected view needs X-View-Password.`,
  security: bearer,
  middleware: auditEvents('view'),
  request: { params: IdParam, query: ScopedEventsQuery, headers: StreamHeaders },
  responses,
})

const panelRoute = createRoute({
  method: 'get',
  path: '/panels/{panelId}/events',
  tags,
  summary: "A panel's events (its owner; JSON page or server-sent events)",
  description: `${readDescription} Another user's panel is a 404.`,
  security: bearer,
  middleware: auditEvents('panel'),
  request: { params: PanelIdParam, query: ScopedEventsQuery, headers: StreamHeaders },
  responses,
})

/** The JSON page or, for `Accept: text/event-stream`, the stream. */
async function answer(c: AppContext, query: EventsInput, lastEventId: number | undefined, target?: EventsTarget) {
  const ctx = ctxOf(c, query)
  if (!wantsStream(c.req.header('accept'))) return sendJson(c, await listEvents(ctx, query, target), 200)
  const body = await openEventStream(ctx, query, lastEventId, target, c.req.raw.signal)
  return new Response(body, {
    status: 200,
    headers: {
      'Content-Type': `${EVENT_STREAM}; charset=utf-8`,
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    },
  })
}

export const eventsRouter = createRouter()
  .openapi(listRoute, async (c) => answer(c, c.req.valid('query'), c.req.valid('header')['last-event-id']) as never)
  .openapi(
    viewRoute,
    async (c) =>
      answer(c, c.req.valid('query'), c.req.valid('header')['last-event-id'], { viewId: c.req.valid('param').id }) as never,
  )
  .openapi(
    panelRoute,
    async (c) =>
      answer(c, c.req.valid('query'), c.req.valid('header')['last-event-id'], {
        panelId: c.req.valid('param').panelId,
      }) as never,
  )
