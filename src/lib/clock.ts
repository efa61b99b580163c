/** The only source of "now" for services and engines, so tests can fix time. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

export const isoNow = (clock: Clock) => clock.now().toISOString()
