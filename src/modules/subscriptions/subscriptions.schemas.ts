import { z } from '@hono/zod-openapi'
import type { DeliveryStatus, subscriptionDeliveries, subscriptions } from '../../db/schema-live.ts'
import { OffsetPaging, refuseOffsetWithPage } from '../../http/offset-paging.ts'
import { IdParam, TenantBody, TenantQuery, Timestamp } from '../../http/router.ts'
import { EVENT_TYPES } from '../../rowstore/events.ts'

/** `*` selects every event type, those added later included (docs/live.md "Outbound webhooks"). */
export const ALL_EVENTS = '*'

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'skipped'] as const satisfies readonly DeliveryStatus[]

const Url = z
  .string()
  .trim()
  .min(1)
  .max(2048)
  .refine((v) => URL.canParse(v), 'must be an absolute URL')
  .openapi({ example: 'https://hooks.example.com/panels', description: 'https:// in production; http:// allowed in development' })

const EventList = z
  .array(z.enum([ALL_EVENTS, ...EVENT_TYPES]))
  .min(1)
  .max(EVENT_TYPES.length + 1)
  .openapi({ example: ['row.entered', 'row.left'], description: 'The event types to receive; `*` for every type' })

const Secret = z
  .string()
  .min(16)
  .max(256)
  .openapi({ description: 'The HMAC signing secret; generated (and answered once) when absent', example: undefined })

const OptionalId = z.number().int().positive().nullable().optional()

export const CreateSubscriptionBody = z
  .object({
    url: Url,
    events: EventList,
    panelId: OptionalId.openapi({ description: 'Only events of this panel (one of yours)', example: 1 }),
    viewId: OptionalId.openapi({ description: 'Only events of this view (one you may read)', example: 2 }),
    secret: Secret.optional(),
    description: z.string().max(1000).nullable().optional().openapi({ example: 'Ward 3 worklist' }),
    active: z.boolean().optional().default(true),
    ...TenantBody,
  })
  .openapi('CreateSubscription')

export const UpdateSubscriptionBody = z
  .object({
    url: Url.optional(),
    events: EventList.optional(),
    panelId: OptionalId,
    viewId: OptionalId,
    secret: Secret.optional().openapi({ description: 'A new signing secret (rotation); the stored one is kept when absent' }),
    description: z.string().max(1000).nullable().optional(),
    active: z
      .boolean()
      .optional()
      .openapi({ description: 'true re-enables a disabled subscription (its failure count restarts)' }),
    ...TenantBody,
  })
  .openapi('UpdateSubscription')

export const SubscriptionSchema = z
  .object({
    id: z.number().int(),
    url: z.string(),
    events: z.array(z.string()),
    panelId: z.number().int().nullable(),
    viewId: z.number().int().nullable(),
    description: z.string().nullable(),
    active: z.boolean(),
    disabledReason: z.string().nullable(),
    consecutiveFailures: z.number().int(),
    lastEventSeq: z.number().int().openapi({ description: 'The last event seq of the tenant the queue has taken in' }),
    secret: z.string().optional().openapi({ description: 'Only in the answer to the create that generated it, never again' }),
    tenantId: z.string(),
    userId: z.string(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .openapi('Subscription')

export const SubscriptionList = z
  .object({ subscriptions: z.array(SubscriptionSchema), total: z.number().int() })
  .openapi('SubscriptionList')

export const DeliverySchema = z
  .object({
    id: z.number().int(),
    deliveryId: z.string().openapi({ description: 'X-Delivery-Id, the same on every attempt' }),
    eventSeq: z.number().int().nullable().openapi({ description: 'null for ping and events.expired' }),
    eventType: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int().openapi({ description: 'Attempts made (the last one is X-Delivery-Attempt)' }),
    statusCode: z.number().int().nullable().openapi({ description: "The last attempt's HTTP status; null without an answer" }),
    durationMs: z.number().int().nullable(),
    error: z.string().nullable(),
    nextAttemptAt: Timestamp.nullable().openapi({ description: 'When a pending delivery is tried next' }),
    lastAttemptAt: Timestamp.nullable(),
    attemptsLog: z
      .array(
        z.object({
          attempt: z.number().int(),
          at: Timestamp,
          statusCode: z.number().int().nullable(),
          durationMs: z.number().int().nullable(),
          error: z.string().nullable(),
        }),
      )
      .openapi({ description: 'Every attempt of this delivery, oldest first (status code, duration, error)' }),
    createdAt: Timestamp,
  })
  .openapi('WebhookDelivery')

export const DeliveryPage = z
  .object({ deliveries: z.array(DeliverySchema), total: z.number().int(), hasMore: z.boolean() })
  .openapi('WebhookDeliveryPage')

export const SubscriptionsQuery = TenantQuery

export const DeliveriesQuery = z
  .object({
    ...TenantQuery.shape,
    status: z.enum(DELIVERY_STATUSES).optional(),
    ...OffsetPaging,
  })
  .superRefine(refuseOffsetWithPage)

export const SubscriptionIdParam = IdParam

export type CreateSubscriptionInput = z.infer<typeof CreateSubscriptionBody>
export type UpdateSubscriptionInput = z.infer<typeof UpdateSubscriptionBody>
export type DeliveriesInput = z.infer<typeof DeliveriesQuery>
export type SubscriptionRow = typeof subscriptions.$inferSelect
export type DeliveryRow = typeof subscriptionDeliveries.$inferSelect
export type SubscriptionDto = z.infer<typeof SubscriptionSchema>
export type DeliveryDto = z.infer<typeof DeliverySchema>

export const toSubscriptionDto = (row: SubscriptionRow, secret?: string): SubscriptionDto => ({
  id: row.id,
  url: row.url,
  events: row.events,
  panelId: row.panelId ?? null,
  viewId: row.viewId ?? null,
  description: row.description ?? null,
  active: row.active,
  disabledReason: row.disabledReason ?? null,
  consecutiveFailures: row.consecutiveFailures,
  lastEventSeq: row.cursorSeq,
  ...(secret === undefined ? {} : { secret }),
  tenantId: row.tenantId,
  userId: row.userId,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
})

export const toDeliveryDto = (row: DeliveryRow): DeliveryDto => ({
  id: row.id,
  deliveryId: row.deliveryId,
  eventSeq: row.eventSeq ?? null,
  eventType: row.eventType,
  status: row.status,
  attempts: row.attempts,
  statusCode: row.statusCode ?? null,
  durationMs: row.durationMs ?? null,
  error: row.error ?? null,
  nextAttemptAt: row.nextAttemptAt ?? null,
  lastAttemptAt: row.lastAttemptAt ?? null,
  attemptsLog: row.history ?? [],
  createdAt: row.createdAt,
})
