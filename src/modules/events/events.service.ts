import type { ServiceContext } from '../../context.ts'
import { noteAccess } from '../audit/audit.record.ts'
import { requirePanel } from '../panels/panels.service.ts'
import { loadViewFor } from '../views/views.service.ts'
import { loadCatalogue, readableFor } from './events.access.ts'
import { checkCursor, type EventFilter, logPosition, readReadable } from './events.log.ts'
import { type EventPageDto, type EventsInput, ROW_EVENT_TYPES, toEventDto } from './events.schemas.ts'
import { eventStream } from './events.stream.ts'

/** The view or panel a scoped path names (`/views/{id}/events`, `/panels/{panelId}/events`). */
export type EventsTarget = { viewId: number } | { panelId: number }

interface ResolvedScope {
  filter: EventFilter
  unlocked: Set<number>
  bound?: { viewId?: number; panelId?: number }
}

/**
 * The scope of a read: a view path needs a view the caller may `read` now (404 when they cannot
 * see it, its password when protected: as its rows); a panel path a panel the caller owns (or an
 * admin). Query filters narrow further; they never widen what the caller may read.
 */
async function resolveScope(ctx: ServiceContext, input: EventsInput, target?: EventsTarget): Promise<ResolvedScope> {
  const filter: EventFilter = { types: input.types, panelId: input.panelId, viewId: input.viewId }
  const unlocked = new Set<number>()
  if (!target) return { filter, unlocked }
  if ('viewId' in target) {
    const view = await loadViewFor(ctx, target.viewId, 'read', 'read its events')
    if (view.access.needsPassword) unlocked.add(view.row.id)
    noteAccess(ctx, { viewId: view.row.id, panelId: view.row.panelId })
    return { filter: { ...filter, viewId: target.viewId }, unlocked, bound: { viewId: target.viewId } }
  }
  await requirePanel(ctx, target.panelId)
  noteAccess(ctx, { panelId: target.panelId })
  return { filter: { ...filter, panelId: target.panelId }, unlocked, bound: { panelId: target.panelId } }
}

/**
 * One page of the events the caller may read, oldest first (LIVE.md "Reading the log";
 * docs/live.md "Reading the feed"). Without `after` the page starts at the oldest retained event;
 * a cursor older than the retained log is a 410 CURSOR_EXPIRED. `lastSeq` is where the next page
 * starts: the last event's seq when `hasMore`, else the head of the log as this read saw it (no
 * event the caller may read lies between), never below the cursor given.
 */
export async function listEvents(ctx: ServiceContext, input: EventsInput, target?: EventsTarget): Promise<EventPageDto> {
  const { filter, unlocked } = await resolveScope(ctx, input, target)
  const { tenantId } = ctx.scope
  const catalogue = await loadCatalogue(ctx.db, tenantId)
  const readable = readableFor(catalogue, ctx.scope, ctx.clock.now(), unlocked)
  const { events, position } = await readReadable(ctx.db, tenantId, input.after, input.limit, readable, filter)
  if (input.after !== undefined) checkCursor(input.after, position)
  const hasMore = events.length > input.limit
  const page = hasMore ? events.slice(0, input.limit) : events
  const from = input.after ?? position.oldest - 1
  const lastSeq = hasMore ? page[page.length - 1].seq : Math.max(from, position.head, page.at(-1)?.seq ?? 0)
  noteAccess(ctx, { rowCount: page.filter((e) => ROW_EVENT_TYPES.has(e.type)).length })
  return { events: page.map((e) => toEventDto(tenantId, e)), lastSeq, hasMore }
}

/**
 * A server-sent event stream of the events the caller may read (docs/live.md "Server-sent
 * events"), from `Last-Event-ID` when sent, else `after`, else the head of the log (only events
 * committed from now on). A cursor older than the retained log is a 410 before the stream starts.
 * `clientGone` is the request's signal, aborted when the client disconnects.
 */
export async function openEventStream(
  ctx: ServiceContext,
  input: EventsInput,
  lastEventId: number | undefined,
  target?: EventsTarget,
  clientGone?: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  const { filter, unlocked, bound } = await resolveScope(ctx, input, target)
  const position = await logPosition(ctx.db, ctx.scope.tenantId)
  const given = lastEventId ?? input.after
  if (given !== undefined) checkCursor(given, position)
  return eventStream(ctx, { cursor: given ?? position.head, filter, unlocked, bound, clientGone })
}
