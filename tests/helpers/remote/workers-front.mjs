// Test-only front of the Workers bundle (copied beside workers.js by workers.setup.ts): the bundle's
// own handlers, with the test clock of test-clock.mjs.

import { installTestClock } from './test-clock.mjs'
import worker from './workers.js'

const take = installTestClock()

export default {
  fetch: (request, env, ctx) => worker.fetch(take(request), env, ctx),
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
}
