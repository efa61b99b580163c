import { createRouter } from '../../http/router.ts'

export const datasourcesRouter = createRouter()
