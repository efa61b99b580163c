import { z } from '@hono/zod-openapi'
import type { NotificationImpact, NotificationType } from '../../db/schema.ts'
import { QueryBoolean, TenantBody, TenantId, Timestamp, UserId } from '../../http/router.ts'

export const NOTIFICATION_TYPES = [
  'VIEW_PUBLISHED',
  'VIEW_UPDATED',
  'DATA_CHANGED',
  'COLUMN_CHANGED',
  'mention',
] as const satisfies readonly NotificationType[]
export const NOTIFICATION_IMPACTS = ['info', 'warning', 'breaking'] as const satisfies readonly NotificationImpact[]

export const ListNotificationsQuery = z.object({
  tenantId: TenantId.optional(),
  userId: UserId.optional(),
  isRead: QueryBoolean.optional().openapi({ description: '`false`: unread only; `true`: read only' }),
  limit: z.coerce.number().int().min(1).max(100).optional().default(50).openapi({ example: 50 }),
  offset: z.coerce.number().int().min(0).optional().default(0).openapi({ example: 0 }),
})

export const Notification = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    viewId: z.number().int().openapi({
      example: 3,
      description: 'The view concerned; for a `mention`, the view the comment was written through (0: the panel’s rows)',
    }),
    userId: z.string().openapi({ example: 'user-456', description: 'The recipient' }),
    tenantId: z.string().openapi({ example: 'tenant-123' }),
    type: z.enum(NOTIFICATION_TYPES).openapi({ example: 'VIEW_PUBLISHED' }),
    impact: z.enum(NOTIFICATION_IMPACTS).openapi({ example: 'info' }),
    message: z.string().openapi({ example: 'View "Open cases" was published' }),
    isRead: z.boolean().openapi({ example: false }),
    createdAt: Timestamp,
    readAt: Timestamp.nullable(),
    view: z
      .object({
        id: z.number().int().openapi({ example: 3 }),
        name: z.string().openapi({ example: 'Open cases' }),
        panelId: z.number().int().openapi({ example: 1 }),
      })
      .nullable()
      .openapi({
        description: 'null when the view (or its panel) has been deleted, or a mention was not written through a view',
      }),
    comment: z
      .object({
        id: z.number().int().openapi({ example: 12 }),
        rowId: z.number().int().openapi({ example: 17 }),
        panelId: z.number().int().openapi({ example: 1 }),
      })
      .nullable()
      .optional()
      .openapi({ description: 'Only on a `mention`: the comment naming the recipient; null once it (or its panel) is deleted' }),
  })
  .openapi('Notification')

export const NotificationPage = z
  .object({
    notifications: z.array(Notification),
    total: z.number().int().openapi({ example: 1, description: 'Notifications matching the filter' }),
    unreadCount: z.number().int().openapi({ example: 1, description: 'All unread notifications of the caller' }),
    hasMore: z.boolean().openapi({ example: false }),
  })
  .openapi('NotificationPage')

export const MarkReadBody = z
  .object({
    notificationIds: z
      .array(z.number().int().min(1).max(Number.MAX_SAFE_INTEGER))
      .min(1)
      .max(500)
      .openapi({ example: [1, 2] }),
    ...TenantBody,
  })
  .openapi('MarkNotificationsRead')

export const MarkReadResult = z
  .object({
    updated: z.number().int().openapi({ example: 2, description: 'Unread notifications of the caller now marked read' }),
  })
  .openapi('MarkNotificationsReadResult')

export type ListNotificationsInput = z.infer<typeof ListNotificationsQuery>
export type MarkReadInput = z.infer<typeof MarkReadBody>
export type NotificationDto = z.infer<typeof Notification>
export type NotificationPageDto = z.infer<typeof NotificationPage>
