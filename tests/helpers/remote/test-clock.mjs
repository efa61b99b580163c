/**
 * Test-only, never part of a deployed bundle or entry: gives a server under test the test's clock.
 * The suite's forwarding app (tests/helpers/remote/app.ts) sends every request with the test's
 * `t.clock.now()` in the `x-test-clock` header; the server's global `Date` then answers that instant
 * (fixed, like the in-process test clock) until the next request moves it. This fakes the platform
 * clock the way fake timers do (vi.setSystemTime), not any of the app's code.
 */
export const TEST_CLOCK_HEADER = 'x-test-clock'

/**
 * Installs the fixed Date; returns what turns an incoming request into the one to serve, with
 * `take.at(ms)` to fix the instant for work no request carries (a cron invocation's scheduledTime).
 */
export function installTestClock() {
  const RealDate = Date
  let fixed
  class TestDate extends RealDate {
    constructor(...args) {
      if (args.length === 0 && fixed !== undefined) super(fixed)
      else super(...args)
    }
    static now() {
      return fixed ?? RealDate.now()
    }
  }
  globalThis.Date = TestDate
  const take = (request) => {
    const at = request.headers.get(TEST_CLOCK_HEADER)
    if (at === null) return request
    fixed = RealDate.parse(at)
    const served = new Request(request)
    served.headers.delete(TEST_CLOCK_HEADER)
    return served
  }
  take.at = (ms) => {
    fixed = ms
  }
  return take
}
