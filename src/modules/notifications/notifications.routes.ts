import { createRoute } from '@hono/zod-openapi'
import { ctxOf } from '../../http/auth.ts'
import { sendJson } from '../../http/response-headers.ts'
import { bearer, createRouter, errorResponses, json } from '../../http/router.ts'
import { ListNotificationsQuery, MarkReadBody, MarkReadResult, NotificationPage } from './notifications.schemas.ts'
import { listNotifications, markNotificationsRead } from './notifications.service.ts'

const tags = ['Notifications']

const listRoute = createRoute({
  method: 'get',
  path: '/notifications/views',
  tags,
  summary: 'List the caller’s view notifications',
  description: 'Newest first. `isRead=false` selects unread ones; `unreadCount` counts every unread notification.',
  security: bearer,
  request: { query: ListNotificationsQuery },
  responses: { 200: json(NotificationPage, 'One page of notifications'), ...errorResponses },
})

const markReadRoute = createRoute({
  method: 'put',
  path: '/notifications/views/mark-read',
  tags,
  summary: 'Mark notifications as read',
  description:
    '`updated` counts the caller’s unread notifications among `notificationIds` now marked read; other ids are ignored.',
  security: bearer,
  request: { body: { required: true, content: { 'application/json': { schema: MarkReadBody } } } },
  responses: { 200: json(MarkReadResult, 'How many notifications were marked read'), ...errorResponses },
})

export const notificationsRouter = createRouter()
  .openapi(listRoute, async (c) => {
    const query = c.req.valid('query')
    return sendJson(c, await listNotifications(ctxOf(c, query), query), 200)
  })
  .openapi(markReadRoute, async (c) => {
    const body = c.req.valid('json')
    return sendJson(c, await markNotificationsRead(ctxOf(c, body), body), 200)
  })
