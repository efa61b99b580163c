import { createRouter } from '../../http/router.ts'

export const healthRouter = createRouter()
