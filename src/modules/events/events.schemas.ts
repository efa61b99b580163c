import { z } from '@hono/zod-openapi'
import type { EventType } from '../../db/schema-live.ts'
import { TenantQuery, Timestamp } from '../../http/router.ts'
import { eventData } from '../../rowstore/event-json.ts'
import { EVENT_TYPES } from '../../rowstore/events.ts'

/**
 * Event types that speak of one row (what the read audit counts as rows read; docs/audit.md): every
 * `row.*` type. Membership events carry the row's values; `row.work_updated`, `row.commented` and
 * `row.overdue` name the row by its key (often a patient id) with its work state or a comment, which
 * is row-level data as much as a cell.
 */
export const ROW_EVENT_TYPES: ReadonlySet<string> = new Set(EVENT_TYPES.filter((t) => t.startsWith('row.')))

/** The most events one page answers. */
export const MAX_EVENTS_LIMIT = 1000

/** A sequence number as text: a non-negative integer (a cursor, `Last-Event-ID`). */
const seqText = z
  .string()
  .regex(/^\d{1,15}$/, 'must be a non-negative integer')
  .transform(Number)

const positiveId = z
  .string()
  .regex(/^[1-9]\d{0,15}$/, 'must be a positive integer')
  .transform(Number)

const TypeList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
  )
  .superRefine((types, ctx) => {
    const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t))
    if (unknown.length > 0) {
      ctx.addIssue({ code: 'custom', message: `unknown event type(s): ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}` })
    }
  })
  .transform((types) => types as EventType[])

export const EventsQuery = TenantQuery.extend({
  after: seqText.optional().openapi({
    type: 'integer',
    description:
      'Answer the events after this `seq` (the `lastSeq` of the previous page). Default: the oldest retained event (JSON) or the head of the log (stream).',
    example: 120,
  }),
  limit: z
    .string()
    .regex(/^\d{1,4}$/, 'must be an integer from 1 to 1000')
    .transform(Number)
    .pipe(z.number().int().min(1).max(MAX_EVENTS_LIMIT))
    .optional()
    .default(100)
    .openapi({ type: 'integer', description: 'Events per page, 1–1000 (default 100)', example: 100 }),
  types: TypeList.optional().openapi({
    type: 'string',
    description: `Comma-separated event types to answer (default: all): ${EVENT_TYPES.join(', ')}`,
    example: 'row.entered,row.left',
  }),
  panelId: positiveId.optional().openapi({ type: 'integer', description: 'Only events of this panel', example: 3 }),
  viewId: positiveId.optional().openapi({ type: 'integer', description: 'Only events of this view', example: 8 }),
})

/** The query of the scoped paths (`/views/{id}/events`, `/panels/{panelId}/events`): the path names the scope. */
export const ScopedEventsQuery = EventsQuery.omit({ panelId: true, viewId: true })

export const StreamHeaders = z.object({
  'last-event-id': seqText.optional().openapi({
    type: 'integer',
    description: 'Server-sent events: resume after this `seq` (sent by EventSource on reconnect); wins over `after`.',
    example: 120,
  }),
})

export type EventsInput = z.infer<typeof EventsQuery>

export const Event = z
  .object({
    id: z.string().openapi({ description: 'The `seq` as text (the SSE `id`)', example: '121' }),
    seq: z.number().int().openapi({ example: 121 }),
    type: z.enum(EVENT_TYPES).openapi({ example: 'row.entered' }),
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    occurredAt: Timestamp,
    panelId: z.number().int().optional().openapi({ example: 3 }),
    viewId: z.number().int().optional().openapi({ example: 8 }),
    dataSourceId: z.number().int().optional().openapi({ example: 5 }),
    data: z.record(z.string(), z.unknown()).openapi({
      description:
        'By type (docs/live.md "Events"): `row.entered`/`row.left` `{ rowId, key, row }`; `row.updated` also `changed`; ' +
        '`row.work_updated` `{ rowId, key, panelId, work, changed: { <field>: { from, to } }, by, cause }` (docs/worklist.md "Events"); ' +
        '`panel.rows_changed` `{ inserted, updated, deleted, cause }`; `sync.*` the sync run; `view.*` `{ view }` or `{ id }`.',
      example: { rowId: 41, key: 'Patient/17', row: { Family: 'Smith' } },
    }),
  })
  .openapi('Event')

export const EventPage = z
  .object({
    events: z.array(Event),
    lastSeq: z.number().int().openapi({
      description:
        'Where the next page starts (`after`): the seq of the last event answered when `hasMore`; otherwise the head of the log when this page was read (nothing readable lies between), never less than the cursor given.',
      example: 121,
    }),
    hasMore: z.boolean().openapi({ description: 'More events the caller may read follow `lastSeq` now' }),
  })
  .openapi('EventPage')

export type EventDto = z.infer<typeof Event>
export type EventPageDto = z.infer<typeof EventPage>

/** One stored event as read from the log (snake_case columns of `events`). */
export interface LoggedEvent {
  seq: number
  type: EventType
  occurredAt: string
  panelId: number | null
  viewId: number | null
  dataSourceId: number | null
  /** The `data` JSON text as stored. */
  data: string
}

/** The event as the API shows it; `data` is parsed from its stored text (a row.updated's `changed` derived: event-json.ts). */
export function toEventDto(tenantId: string, e: LoggedEvent): EventDto {
  return {
    id: String(e.seq),
    seq: e.seq,
    type: e.type,
    tenantId,
    occurredAt: e.occurredAt,
    ...(e.panelId === null ? {} : { panelId: e.panelId }),
    ...(e.viewId === null ? {} : { viewId: e.viewId }),
    ...(e.dataSourceId === null ? {} : { dataSourceId: e.dataSourceId }),
    data: eventData(e.type, JSON.parse(e.data) as Record<string, unknown>),
  }
}
