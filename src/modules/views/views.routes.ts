import { createRouter } from '../../http/router.ts'

export const viewsRouter = createRouter()
