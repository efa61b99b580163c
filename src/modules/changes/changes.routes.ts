import { createRouter } from '../../http/router.ts'

export const changesRouter = createRouter()
