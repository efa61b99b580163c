import { createRouter } from '../../http/router.ts'

export const notificationsRouter = createRouter()
