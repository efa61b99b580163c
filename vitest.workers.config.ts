import { targetConfig } from './vitest.targets.ts'

// `npm run test:workers`: the API suite against the Workers bundle in workerd (Miniflare, local D1 and KV).
export default targetConfig('workers')
