import { createRouter } from '../../http/router.ts'

export const columnsRouter = createRouter()
