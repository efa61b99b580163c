// Test-only front of src/runtime/deno.ts (run by tests/helpers/remote/deno.ts with the flags of
// `deno task start`): the entry itself, its requests served with the test clock of test-clock.mjs,
// and the maintenance tick run in this Deno process on demand (`POST /__test/maintenance-tick`,
// the test's t.tick()): the entry's interval loop runs the same function, which tests cannot time.
import { parseConfig } from '../../../src/config.ts'
import { buildDeps, type Deps } from '../../../src/deps.ts'
import { createLogger } from '../../../src/lib/logger.ts'
import { nodePrimitives, withDevSecrets } from '../../../src/runtime/node-primitives.ts'
import { runMaintenanceTick } from '../../../src/scheduler/maintenance-tick.ts'
import { installTestClock, TEST_CLOCK_HEADER } from './test-clock.mjs'

type Handler = (request: Request, info: unknown) => Response | Promise<Response>
declare const Deno: { serve(options: unknown, handler: Handler): unknown; env: { toObject(): Record<string, string> } }

const TICK_PATH = '/__test/maintenance-tick'

const take = installTestClock()
/** The tick's own deps, as the entry builds its own: the same configuration, database and cache. */
let tickDeps: Promise<Deps> | undefined
const depsOfTick = () => {
  tickDeps ??= (async () => {
    const config = withDevSecrets(parseConfig(Deno.env.toObject()))
    const log = createLogger(config.logLevel)
    return buildDeps(config, { ...(await nodePrimitives(config, log)), runtime: 'deno', log })
  })()
  return tickDeps
}

const serve = Deno.serve.bind(Deno)
Deno.serve = (options, handler) =>
  serve(options, async (request, info) => {
    if (request.method === 'POST' && new URL(request.url).pathname === TICK_PATH) {
      const at = Date.parse(request.headers.get(TEST_CLOCK_HEADER) ?? '')
      take.at(at)
      return Response.json(await runMaintenanceTick(await depsOfTick(), new Date(at)))
    }
    return handler(take(request), info)
  })
await import('../../../src/runtime/deno.ts')
