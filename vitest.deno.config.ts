import { targetConfig } from './vitest.targets.ts'

// `npm run test:deno`: the API suite against `deno task start` (src/runtime/deno.ts) on a libSQL file.
export default targetConfig('deno')
