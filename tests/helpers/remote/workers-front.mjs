// Test-only front of the Workers bundle (copied beside workers.js by workers.setup.ts): the bundle's
// own handlers, with the test clock of test-clock.mjs. A cron invocation runs at its scheduledTime,
// and logs at info, so the test reads the maintenance report it logs (workers.ts `tick`).

import { installTestClock } from './test-clock.mjs'
import worker from './workers.js'

const take = installTestClock()

export default {
  fetch: (request, env, ctx) => worker.fetch(take(request), env, ctx),
  scheduled: (controller, env, ctx) => {
    take.at(controller.scheduledTime)
    return worker.scheduled(controller, { ...env, LOG_LEVEL: 'info' }, ctx)
  },
}
