/**
 * Measures several steps call by call in one loop (step 1, step 2, …, step 1, step 2, …), so the
 * drift of a shared machine hits each alike. A step may prepare each call (a write, emptying a
 * cache) outside its timing; the event loop turns after each call. After one untimed warm-up
 * round, `n` timed rounds; answers p50 and p95 (ms) per step.
 */
export interface Step {
  name: string
  /** Untimed, right before each call. */
  prepare?: (i: number) => Promise<unknown>
  run: (i: number) => Promise<unknown>
}

export interface StepTimes {
  p50: number
  p95: number
  times: number[]
}

export async function interleaved(n: number, steps: Step[], warmUp = true): Promise<Record<string, StepTimes>> {
  const times = new Map(steps.map((s) => [s.name, [] as number[]]))
  for (let round = warmUp ? -1 : 0; round < n; round++) {
    const i = Math.max(0, round)
    for (const step of steps) {
      await step.prepare?.(i)
      const t = performance.now()
      await step.run(i)
      if (round >= 0) times.get(step.name)?.push(performance.now() - t)
      await turn()
    }
  }
  return Object.fromEntries(steps.map((s) => [s.name, quantiles(times.get(s.name) ?? [])]))
}

export function quantiles(list: number[]): StepTimes {
  const sorted = [...list].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { p50: at(0.5), p95: at(0.95), times: list }
}

/**
 * Lets the event loop turn, as a server's does between requests. The native libSQL client frees a
 * statement when its JS object is collected, in a callback of a later event-loop turn; a loop of
 * awaits on the local client (whose promises settle at once) never gets there, and the native
 * memory of every statement it ran, ~3.6 KB each, stays until it does (300,000 `SELECT 1` in such
 * a loop: 1.1 GB resident; with a turn every 1,000 statements: 53 MB).
 */
export const turn = () => new Promise<void>((resolve) => setImmediate(resolve))
