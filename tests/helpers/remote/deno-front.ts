// Test-only front of src/runtime/deno.ts (run by tests/helpers/remote/deno.ts with the flags of
// `deno task start`): the entry itself, its requests served with the test clock of test-clock.mjs.
import { installTestClock } from './test-clock.mjs'

type Handler = (request: Request, info: unknown) => Response | Promise<Response>
declare const Deno: { serve(options: unknown, handler: Handler): unknown }

const take = installTestClock()
const serve = Deno.serve.bind(Deno)
Deno.serve = (options, handler) => serve(options, (request, info) => handler(take(request), info))
await import('../../../src/runtime/deno.ts')
